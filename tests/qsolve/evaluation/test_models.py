"""evaluation.yaml and the choice of the judging model: the seed's order, the fallback, only declared ids."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from qsolve.evaluation import models
from qsolve.evaluation.models import (
    CLASSICAL_JUDGE,
    ConfigError,
    ModelUnavailable,
    UnknownModel,
    api_key,
    choose_model,
    config_path,
    load_config,
    parse_config,
)

REPO = Path(__file__).resolve().parents[3]


def entry(model_id: str, **changes) -> dict:
    values = {
        "id": model_id,
        "base_url": "http://127.0.0.1:8000/v1",
        "temperature": 0.0,
        "num_ctx": 16384,
        "images": True,
    }
    values.update(changes)
    return values


def config(*entries: dict):
    return parse_config({"models": list(entries)}, source="test.yaml")


# --- the file ---------------------------------------------------------------------------------------


def test_the_shipped_files_are_the_same_and_declare_only_the_classical_judge():
    operator = REPO / "config" / "evaluation.yaml"
    packaged = REPO / "qsolve" / "evaluation" / "evaluation.yaml"
    assert operator.read_bytes() == packaged.read_bytes()
    cfg = load_config(packaged)
    assert cfg.models == []
    assert cfg.declared() == [CLASSICAL_JUDGE]


def test_a_declared_model_is_read_with_its_fields():
    cfg = config(entry("Ising-Calibration-1-8B", model="nvidia/Ising", api_key_env="ISING_KEY"))
    spec = cfg.get("Ising-Calibration-1-8B")
    assert (spec.base_url, spec.endpoint_model, spec.api_key_env) == (
        "http://127.0.0.1:8000/v1",
        "nvidia/Ising",
        "ISING_KEY",
    )
    assert (spec.temperature, spec.num_ctx, spec.images) == (0.0, 16384, True)
    assert "api_key_env" not in spec.public()


def test_where_the_file_is_found(tmp_path, monkeypatch):
    home = tmp_path / "home"
    home.mkdir()
    # nothing at home: the checkout's config/evaluation.yaml
    assert config_path({"QSOLVE_HOME": str(home)}) == REPO / "config" / "evaluation.yaml"
    (home / "evaluation.yaml").write_text(yaml.safe_dump({"models": [entry("at-home")]}))
    assert config_path({"QSOLVE_HOME": str(home)}) == home / "evaluation.yaml"
    explicit = tmp_path / "mine.yaml"
    explicit.write_text(yaml.safe_dump({"models": [entry("mine")]}))
    env = {"QSOLVE_HOME": str(home), "QSOLVE_EVALUATION_CONFIG": str(explicit)}
    assert config_path(env) == explicit
    assert load_config(environ=env).declared() == ["mine", CLASSICAL_JUDGE]
    with pytest.raises(ConfigError, match="no such file"):
        config_path({"QSOLVE_EVALUATION_CONFIG": str(tmp_path / "absent.yaml")})
    # without a checkout, the packaged copy
    monkeypatch.setattr(models, "_CHECKOUT", tmp_path / "no-checkout.yaml")
    assert config_path({"QSOLVE_HOME": str(tmp_path / "empty")}) == models._PACKAGED


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ({"temperature": 0.7}, "temperature must be 0.0"),
        ({"api_key_env": "sk-live-123456"}, "NAME of an environment variable"),
        ({"num_ctx": None}, "num_ctx: required"),
        ({"base_url": None}, "base_url: required"),
        ({"colour": "red"}, "unknown key"),
        ({"base_url": "127.0.0.1:8000"}, "http:// or https:// URL"),
        ({"base_url": "http://me:pw@127.0.0.1/v1"}, "no credentials"),
        ({"id": CLASSICAL_JUDGE}, "built-in classical judge"),
    ],
)
def test_a_bad_entry_is_refused_where_it_is(bad, message):
    with pytest.raises(ConfigError, match=message) as e:
        config(entry("a"), entry("b", **bad))
    assert "models[1]" in str(e.value)


def test_a_key_written_in_the_file_is_refused_without_being_repeated():
    secret = "sk-planted-key-0123456789"
    with pytest.raises(ConfigError) as e:
        config(entry("a", api_key=secret))
    assert "api_key_env" in str(e.value)
    assert secret not in str(e.value)
    with pytest.raises(ConfigError) as e:
        config(entry("a", api_key_env=secret))
    assert secret not in str(e.value)


def test_an_id_declared_twice_and_a_file_that_is_not_yaml(tmp_path):
    with pytest.raises(ConfigError, match="declared twice"):
        config(entry("a"), entry("a"))
    broken = tmp_path / "broken.yaml"
    broken.write_text("models: [\n")
    with pytest.raises(ConfigError, match="not YAML"):
        load_config(broken)


# --- the choice -------------------------------------------------------------------------------------

DECLARED = config(
    entry("text-only", images=False),
    entry("general-vlm"),
    entry("nvidia/ISING-CALIBRATION-1-8B"),
    entry("ising-calibration-second"),
)


def test_an_explicit_id_comes_first():
    choice = choose_model("general-vlm", config=DECLARED, environ={"QCALEVAL_MODEL": "text-only"})
    assert (choice.id, choice.chosen_by, choice.fallback) == ("general-vlm", "explicit", False)


def test_then_qcaleval_model():
    choice = choose_model(config=DECLARED, environ={"QCALEVAL_MODEL": "general-vlm"})
    assert (choice.id, choice.chosen_by, choice.fallback) == ("general-vlm", "environment", False)


def test_then_the_first_id_matching_ising_calibration_whatever_its_case():
    choice = choose_model(config=DECLARED, environ={})
    assert (choice.id, choice.chosen_by, choice.fallback) == (
        "nvidia/ISING-CALIBRATION-1-8B",
        "calibration-model",
        False,
    )


def test_else_the_first_model_that_takes_images_as_a_fallback():
    cfg = config(entry("text-only", images=False), entry("general-vlm"), entry("other-vlm"))
    choice = choose_model(config=cfg, environ={})
    assert (choice.id, choice.chosen_by, choice.fallback) == ("general-vlm", "fallback", True)


def test_else_the_classical_judge_as_a_fallback():
    for cfg in (config(), config(entry("text-only", images=False))):
        choice = choose_model(config=cfg, environ={})
        assert (choice.id, choice.fallback, choice.model.kind) == (CLASSICAL_JUDGE, True, "classical")


def test_the_classical_judge_named_explicitly_is_no_fallback():
    choice = choose_model(CLASSICAL_JUDGE, config=config(), environ={})
    assert (choice.id, choice.fallback) == (CLASSICAL_JUDGE, False)


def test_an_unknown_id_is_refused_listing_the_declared_ones():
    with pytest.raises(UnknownModel) as e:
        choose_model("gpt-9", config=DECLARED, environ={})
    text = str(e.value)
    assert "'gpt-9'" in text
    for model_id in ("text-only", "general-vlm", "nvidia/ISING-CALIBRATION-1-8B", CLASSICAL_JUDGE):
        assert model_id in text
    with pytest.raises(UnknownModel, match="QCALEVAL_MODEL"):
        choose_model(config=DECLARED, environ={"QCALEVAL_MODEL": "nosuch"})


def test_a_model_without_images_cannot_judge_a_figure():
    with pytest.raises(ModelUnavailable, match="takes no images"):
        choose_model("text-only", config=DECLARED, environ={})


def test_the_key_is_read_from_the_named_variable_only():
    spec = config(entry("a", api_key_env="A_KEY")).get("a")
    assert api_key(spec, {"A_KEY": "s3cret"}) == "s3cret"
    with pytest.raises(ModelUnavailable, match="A_KEY") as e:
        api_key(spec, {})
    assert "s3cret" not in str(e.value)
    keyless = config(entry("b")).get("b")
    assert api_key(keyless, {}) == "no-key"
