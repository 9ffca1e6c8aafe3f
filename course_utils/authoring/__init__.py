"""Maintainers' authoring tools: stored outputs and student versions (``nbtools``,
``student_versions``), the website (``site``), the student release (``release``), the instructor
guide's tables (``guide``) and the drawings (``drawings``). No notebook imports it."""
