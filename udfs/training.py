"""Training compute: FLOPs of a run, its duration at a model FLOPs utilization, and back."""

from __future__ import annotations

from udfs.expr import Num
from udfs.model import model
from udfs.params import fraction, integer, non_negative, positive

SECONDS_PER_DAY = 86400
#: Compute-optimal tokens per parameter (Hoffmann et al., "Training Compute-Optimal Large
#: Language Models", 2022, table 3: about 20 tokens per parameter).
CHINCHILLA_TOKENS_PER_PARAM = 20

gpu_count = integer(1, units="GPUs")
peak = positive("TFLOPS per GPU, dense")
utilization = fraction(open_low=True)


@model(
    "DOUBLE",
    "FLOPs",
    example=(7e9, 2e12),
    params=non_negative("parameters"),
    tokens=non_negative("tokens"),
)
def training_flops(params: Num, tokens: Num) -> Num:
    """Training compute of a dense transformer: 6 FLOPs per parameter per token.

    Formula:
        6 × params × tokens (2 forward + 4 backward); for a mixture of experts pass the active
        parameters per token.

    Units:
        floating-point operations.

    Source:
        Kaplan et al., "Scaling Laws for Neural Language Models", 2020, section 2.1 (C ≈ 6ND);
        Chowdhery et al., "PaLM", 2022, appendix B.

    Example:
        >>> training_flops(7e9, 2e12)
        8.4e+22
    """
    return 6 * params * tokens


@model(
    "DOUBLE",
    "days",
    example=(2.15e25, 25000, 312, 0.34),
    flops=non_negative("FLOPs"),
    gpus=gpu_count,
    peak_tflops=peak,
    mfu=utilization,
)
def training_days(flops: Num, gpus: Num, peak_tflops: Num, mfu: Num) -> Num:
    """Wall-clock days to spend `flops` on `gpus` GPUs at a model FLOPs utilization.

    Formula:
        flops / (gpus × peak_tflops × 1e12 × mfu) / 86400.

    Units:
        days.

    Source:
        MFU as defined by Chowdhery et al., "PaLM: Scaling Language Modeling with Pathways",
        2022, appendix B (achieved model FLOPs per second over peak). GPT-4 as reported by
        SemiAnalysis (2023): about 2.15e25 FLOPs on about 25,000 A100 in 90-100 days at 32-36 %
        MFU.

    Example:
        >>> round(training_days(2.15e25, 25000, 312, 0.32), 1)
        99.7
    """
    return flops / (gpus * peak_tflops * 1e12 * mfu) / SECONDS_PER_DAY


@model(
    "DOUBLE",
    "fraction",
    example=(2.15e25, 25000, 312, 95),
    flops=non_negative("FLOPs"),
    gpus=gpu_count,
    peak_tflops=peak,
    days=positive("days"),
)
def implied_mfu(flops: Num, gpus: Num, peak_tflops: Num, days: Num) -> Num:
    """Model FLOPs utilization a run must have reached: the inverse of `training_days`.

    Formula:
        flops / (gpus × peak_tflops × 1e12 × days × 86400).

    Units:
        fraction of peak.

    Source:
        Chowdhery et al., "PaLM", 2022, appendix B.

    Example:
        >>> round(implied_mfu(2.15e25, 25000, 312, 95), 3)
        0.336
    """
    return flops / (gpus * peak_tflops * 1e12 * days * SECONDS_PER_DAY)


@model("DOUBLE", "tokens", example=(70e9,), params=non_negative("parameters"))
def chinchilla_tokens(params: Num) -> Num:
    """Compute-optimal training tokens for a model of `params` parameters.

    Formula:
        20 × params.

    Units:
        tokens.

    Source:
        Hoffmann et al., "Training Compute-Optimal Large Language Models" (Chinchilla), NeurIPS
        2022: 70B parameters on 1.4T tokens.

    Example:
        >>> chinchilla_tokens(70e9)
        1400000000000.0
    """
    return CHINCHILLA_TOKENS_PER_PARAM * params
