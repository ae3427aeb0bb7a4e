"""Running a submission's code in child processes on the node, and what came back."""
