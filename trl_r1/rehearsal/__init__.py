"""Rehearsing the shipped recipes offline: real model shapes and tokenizers, schema-faithful dataset mirrors.

`models` builds each recipe model's real architecture (random weights) with its real special tokens and chat
template; `fixtures` writes local mirrors of the recipes' Hub datasets in their published schemas, loaded
through the same `load_dataset` path (`TRL_R1_DATA_DIR`). `trl_r1.pipeline.smoke` uses both for `--smoke`.
"""
