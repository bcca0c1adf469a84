"""The files a dataset build writes into its `output_dir` (read back by the Hub export and the pipeline)."""

RECORDS = "records.jsonl"  # one line per prompt, appended after each batch (resume point)
SFT = "sft.jsonl"  # accepted rows in TRL's conversational format
PROMPT_STATS = "prompt_stats.jsonl"  # every prompt row with its pass rate
STATS = "stats.json"  # totals and each filter's rejection count
RUN = "run.json"  # the settings and the model, checked on restart
