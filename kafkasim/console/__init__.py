"""The command line's terminal rendering (rich): run summary tables, the progress bar, the live view, and the
verbs' work behind kafkasim/cli.py. Nothing here computes a statistic: percentiles come from
kafkasim.run.summary (through RunResult.summary or RecentLatencies)."""
