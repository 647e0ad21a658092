"""The program model: what a graph program builds, where it runs, what each run needs."""
