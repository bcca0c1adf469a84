"""Dataset builders: rejection sampling, distillation and Hub publishing, on one generation layer.

- `rejection_sample(RejectionSamplingConfig(...))`: k samples per prompt -> verified, R1-filtered SFT data
  (`trl-r1 rejection-sample`).
- `distill(DistillationConfig(...))`: a teacher's traces -> normalised ``<think>`` SFT data (`trl-r1 distill`).
- `push_to_hub` / `export_for_hub`: a built dataset with a generated dataset card.
"""

from ..verifiers.format import Trace, parse_trace
from .distillation import DistillationConfig, distill
from .filters import R1Filters
from .generation import (
    Completion,
    OpenAIGenerator,
    SamplingParams,
    TransformersGenerator,
    VLLMGenerator,
    load_generator,
)
from .hub import HubPublishError, build_dataset_card, export_for_hub, push_to_hub
from .loading import load_dataset_spec
from .rejection_sampling import RejectionSamplingConfig, RejectionSamplingResult, rejection_sample

__all__ = [
    "Completion", "DistillationConfig", "HubPublishError", "OpenAIGenerator", "R1Filters", "RejectionSamplingConfig", "RejectionSamplingResult",
    "SamplingParams", "Trace", "TransformersGenerator", "VLLMGenerator", "build_dataset_card", "distill",
    "export_for_hub", "load_dataset_spec", "load_generator", "parse_trace", "push_to_hub", "rejection_sample",
]
