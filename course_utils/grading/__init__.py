"""The grader (``course-grade``): plans a class folder, runs each submission in a sandboxed worker,
judges the answers it sends back as plain data, and writes the reports. No notebook imports it.

- ``cli``: the command; ``plan``: what each notebook's tasks and calls are; ``exercises``: which
  checks grade which task; ``sandbox`` and ``worker``: the isolated process student code runs in;
  ``channel`` and ``transport``: the wire between worker and judge; ``judge``: one submission's
  grades; ``report``: grades.csv and the Markdown report.
"""
