"""The memory formula behind the recipes' card sizes: calibrated on the CPU measurements, and the recipes use it."""

import importlib.util
from pathlib import Path

import pytest

from trl_r1.pipeline.memory import (
    CALIBRATION,
    MAX_CALIBRATION_ERROR,
    NF4_BITS,
    calibration_error,
    fit_calibration,
)

ROOT = Path(__file__).resolve().parents[1]


def test_the_stated_error_is_the_formulas_error_on_the_measured_points():
    errors = [abs(formula / measured - 1) for *_, measured, formula in calibration_error()]
    assert len(errors) == len(CALIBRATION) >= 4
    assert max(errors) == pytest.approx(MAX_CALIBRATION_ERROR, abs=0.005)  # the docstring's figure, not a bound


def test_the_constants_are_the_least_squares_fit_of_the_measured_points():
    from trl_r1.pipeline import memory

    factor, overhead = fit_calibration(CALIBRATION)
    assert factor == pytest.approx(memory.ACTIVATION_FACTOR, abs=0.01)
    assert overhead == pytest.approx(memory.CPU_OVERHEAD_GIB, abs=0.01)
    assert NF4_BITS == pytest.approx(4.127, abs=0.001)


def test_every_shipped_recipe_is_sized_by_the_calibrated_formula():
    spec = importlib.util.spec_from_file_location("size_recipes", ROOT / "benchmarks" / "size_recipes.py")
    size_recipes = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(size_recipes)
    recipes = [p for p in sorted(ROOT.glob("recipes/*/*.yaml")) if p.parent.name not in ("tiny", "accelerate_configs")]
    assert len(recipes) == 18
    stale = [p.name for p in recipes if size_recipes.size_recipe(p) != p.read_text()]
    assert not stale, "run python benchmarks/size_recipes.py"


def test_a_single_point_is_fitted_with_the_floor_factor():
    """One measured point (benchmarks/memory.py --only N) has no slope to fit: the factor stays at its floor and
    the overhead absorbs the rest, so the formula meets that point exactly."""
    from trl_r1.pipeline.memory import MIN_ACTIVATION_FACTOR, cpu_estimate_gib

    point = ("grpo", "lora", 128, "stock", 6.10)
    factor, overhead = fit_calibration([point])
    assert factor == MIN_ACTIVATION_FACTOR
    assert cpu_estimate_gib(*point[:4], (factor, overhead)) == pytest.approx(6.10, abs=0.01)
