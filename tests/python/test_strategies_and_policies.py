"""tpusim.distribute scopes and tpusim.mixed_precision policies: the runs inside them are
the runs with the matching options."""
import pathlib

import pytest

import tpusim
from tpusim import distribute, keras, mixed_precision
from tpusim.keras import layers

DLRM = str(pathlib.Path(__file__).resolve().parents[2] / "traces" / "dlrm.onnx")


def test_tpu_strategy_scope_runs_data_parallel_on_its_slice(mlp_path):
    strategy = distribute.TPUStrategy(topology="2x2x1")
    assert strategy.num_replicas_in_sync == 4
    with strategy.scope() as scoped:
        assert scoped is strategy and distribute.get_strategy() is strategy and distribute.has_strategy()
        inside = tpusim.run(mlp_path, batch=16)
    assert not distribute.has_strategy()
    assert inside["interconnect"]["chips"] == 4
    assert inside["total_cycles"] == tpusim.run(mlp_path, batch=16, topology="2x2x1")["total_cycles"]
    assert "interconnect" not in tpusim.run(mlp_path, batch=16)
    with distribute.TPUStrategy("2x2x1", all_reduce_bucket_mib=4).scope():
        bucketed = tpusim.run(mlp_path, batch=16)
        # A keyword given to the run wins over the scope's.
        alone = tpusim.run(mlp_path, batch=16, topology="2x1x1")
    assert bucketed == tpusim.run(mlp_path, batch=16, topology="2x2x1", all_reduce_bucket_mib=4)
    assert alone["interconnect"]["chips"] == 2


def test_parameter_server_strategy_is_the_ps_run():
    strategy = distribute.ParameterServerStrategy(num_workers=4, num_ps=2, sharding="round_robin", steps=3)
    assert strategy.num_replicas_in_sync == 4
    with strategy.scope():
        report = tpusim.run(DLRM, batch=32)
    assert report["ps"] == tpusim.run(DLRM, batch=32, strategy="ps", workers=4, steps=3,
                                      overrides={"ps.tasks": 2, "ps.sharding": "round_robin"})["ps"]
    assert report["overrides"] == {"ps.tasks": "2", "ps.sharding": "round_robin"}


def test_mirrored_strategies_run_as_the_cli_names_them(mlp_path):
    for strategy in (distribute.MirroredStrategy, distribute.MultiWorkerMirroredStrategy):
        assert strategy().run_options() == {"strategy": strategy.name}
    report = tpusim.run(mlp_path, strategy="mirrored", instructions=False)
    assert report["strategy"]["num_replicas_in_sync"] == 4  # tpuv4: one host's 4 chips


def test_bad_strategy_arguments_are_one_line_errors():
    with pytest.raises(tpusim.Error, match="not a slice shape"):
        distribute.TPUStrategy("4x")
    with pytest.raises(tpusim.Error, match="num_workers must be > 0"):
        distribute.ParameterServerStrategy(num_workers=0)


def test_the_global_policy_applies_to_later_runs(mlp_path):
    assert mixed_precision.global_policy().name == "float32"
    try:
        mixed_precision.set_global_policy("mixed_bfloat16")
        policy = mixed_precision.global_policy()
        assert (policy.name, policy.compute_dtype, policy.variable_dtype) == ("mixed_bfloat16", "bfloat16", "float32")
        mixed = tpusim.run(mlp_path, batch=64)
        model = keras.Sequential([keras.Input((784,)), layers.Dense(512, activation="relu"),
                                  layers.Dense(512, activation="relu"), layers.Dense(10)])
        model.compile("sgd", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        built = model.run(batch=64)
        explicit = tpusim.run(mlp_path, batch=64, precision="float32")
    finally:
        mixed_precision.set_global_policy("float32")
    assert mixed["precision"] == built["precision"] == "mixed_bfloat16"
    assert mixed["total_cycles"] == built["total_cycles"]
    assert mixed == tpusim.run(mlp_path, batch=64, precision="mixed_bfloat16")
    assert explicit["precision"] == "float32"
    assert mixed_precision.Policy("float32") == mixed_precision.global_policy()


@pytest.fixture(autouse=True)
def float32_after_each_test():
    """The global policy is process-wide: no test leaves another one set."""
    yield
    mixed_precision.set_global_policy("float32")


def test_mixed_float16_and_int8_are_policies_and_int8_trains_not(mlp_path):
    mixed_precision.set_global_policy("mixed_float16")
    assert mixed_precision.global_policy().compute_dtype == "float16"
    mixed_precision.set_global_policy("int8")
    assert (mixed_precision.global_policy().name, mixed_precision.global_policy().compute_dtype) == ("int8", "int8")
    mixed_precision.set_global_policy("float32")
    int8 = tpusim.run(mlp_path, mode="inference", batch=32, precision="int8", instructions=False)
    f32 = tpusim.run(mlp_path, mode="inference", batch=32, instructions=False)
    assert int8["precision"] == "int8"
    assert int8["memory"]["bytes_by_role"]["weight"] < 0.3 * f32["memory"]["bytes_by_role"]["weight"]
    with pytest.raises(tpusim.Error, match="--mode inference") as error:
        tpusim.run(mlp_path, batch=32, precision="int8")
    assert "\n" not in str(error.value)
    with pytest.raises(tpusim.Error, match="float64"):
        mixed_precision.Policy("float64")
    assert mixed_precision.global_policy().name == "float32"


def test_a_precision_rule_runs_from_python(mlp_path):
    report = tpusim.run(mlp_path, batch=8, instructions=False, precision_rule="float32->mixed_bfloat16 when grad_norm>0",
                        precision_rule_steps=2)
    rule = report["precision_rule"]
    assert rule["fired"] and rule["switch_after_step"] == 0
    assert [p["policy"] for p in rule["phases"]] == ["float32", "mixed_bfloat16"]
    assert report["precision"] == "mixed_bfloat16"
    with pytest.raises(tpusim.Error, match="unknown statistic 'gradnorm'"):
        tpusim.run(mlp_path, precision_rule="float32->mixed_bfloat16 when gradnorm>0")
