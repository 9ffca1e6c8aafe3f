"""Notebook helpers: plotting, interactive explorers, quizzes, timing tools and the
exercise checkers. Notebooks import them; the core and the models never do."""
