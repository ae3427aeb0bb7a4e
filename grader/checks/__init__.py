"""The behavioural checks, one pytest module per assignment (`pytest grader/`)."""
