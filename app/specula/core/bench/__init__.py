"""The benchmark harness behind ``specula bench``: prompts (``prompts``), the runs
(``run``), what they add up to (``results``) and the printed report (``report_text``)."""

from specula.core.bench.prompts import BenchPrompt, load_prompts
from specula.core.bench.report_text import format_report
from specula.core.bench.results import BenchReport, RunResult, oracle, summarize
from specula.core.bench.run import BenchMode, parse_modes, run_bench

__all__ = ["BenchMode", "BenchPrompt", "BenchReport", "RunResult", "format_report", "load_prompts",
           "oracle", "parse_modes", "run_bench", "summarize"]
