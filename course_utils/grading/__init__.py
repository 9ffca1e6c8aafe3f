"""The grader (``course-grade``): plans a class folder, runs each submission in a sandboxed worker,
judges the answers it sends back as plain data, and writes the reports. No notebook imports it.

- ``cli``: the command; ``plan``: what each notebook's tasks and calls are; ``exercises``: which
  checks grade which task; ``sandbox`` and ``worker``: the isolated process student code runs in;
  ``channel`` and ``transport``: the wire between worker and judge; ``judge``: one submission's
  grades; ``report``: grades.csv and the Markdown report; ``cgroup``: a memory group per job slot.

What it promises (INSTRUCTORS.md, "Grade a class", says it for instructors):

- only data crosses between judge and worker: the judge exports nothing, answers no request of the
  worker, and never compiles, imports or runs anything a submission sent; its checkers are a fixed
  list of the course's modules, and grading writes nothing into the course checkout;
- a submission costs only its own row (time, memory, files, odd names and messages), and the
  table and reports are safe to open in a spreadsheet, a Markdown viewer, a browser and a terminal;
- the isolation asked for, or a stop: ``auto`` is bubblewrap; less is asked for by name with
  ``--i-understand``; student code never runs as root;
- an answer that hands its work to the course's own function by a plain call (through imports,
  aliases and notebook helpers) is refused on its text; what that static check cannot decide
  (dynamic code, a course function used as a value) is flagged for the instructor, not refused, and
  graded on what it computes: the worker's copy of the package still holds the reference functions.
"""
