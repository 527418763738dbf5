"""The command line's terminal rendering (rich): run summary tables, the progress bar, the live view, and the
verbs' work behind kafkasim/console/app.py. Nothing here computes a statistic: percentiles come from
kafkasim.record.summary (through RunResult.summary or RecentLatencies)."""
