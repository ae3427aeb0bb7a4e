"""pdl-autograder: behavioural grading for the Parallelism in Deep Learning course."""

__version__ = "0.1.0"
