"""Maintainers' tooling (refreshing outputs, student versions, benchmarks). No notebook imports it."""
