"""One table of the reward names TRL and open-r1 users type (`trl_r1.rewards.aliases`): `trl-r1 evaluate --rewards`
reads them as their entries here, and a recipe naming one fails saying what it is here, from the same row."""

import pytest

from trl_r1.pipeline.evaluate import reward_entries
from trl_r1.pipeline.recipe import reward_weights
from trl_r1.rewards import get_reward_funcs
from trl_r1.rewards.aliases import REWARD_ALIASES


@pytest.mark.parametrize("name", sorted(REWARD_ALIASES))
def test_each_alias_resolves_in_evaluate_and_is_explained_in_a_recipe(name):
    alias = REWARD_ALIASES[name]
    problems: list[str] = []
    assert reward_weights([name], "rl", problems) is None
    assert problems == [f"rl: key 'rewards': {name!r} is {alias.why}"]
    if alias.entry is None:  # no counterpart: evaluate passes the name on, and the registry refuses it
        assert reward_entries([name]) == [name]
        with pytest.raises(ValueError):
            get_reward_funcs([name])
    else:
        assert reward_entries([name]) == [alias.entry]
        assert len(get_reward_funcs([alias.entry])) == 1


def test_open_r1_names_evaluate_did_not_know_before_the_tables_were_one():
    assert reward_entries(["tag_count,binary_code_reward"]) == ["soft_format", {"name": "code", "binary": True}]
