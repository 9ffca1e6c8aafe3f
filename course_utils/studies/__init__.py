"""Maintainers' studies: the stored experiments (``experiments``, ``dates_study``,
``induction_study``) and the benchmarks (``benchmark``, ``attention_speed``). No notebook imports it."""
