"""float32 against mixed_bfloat16 for a small transformer classifier built with tpusim.keras.

The mixed policy keeps the variables in float32 and computes in bfloat16, as Keras's
tf.keras.mixed_precision does: the MXU runs bf16 passes and the activations take half the
HBM bytes. Prints the step time, HBM traffic and peak memory of each policy.

    PYTHONPATH=build/bindings /usr/bin/python3 examples/precision_comparison.py --batch 16
"""
import argparse

from tpusim import keras, mixed_precision
from tpusim.keras import layers


def transformer_classifier(length, width, heads, blocks, vocabulary, classes):
    tokens = keras.Input((length,), dtype="int64", name="tokens")
    x = layers.Embedding(vocabulary, width)(tokens)
    for _ in range(blocks):
        attention = layers.MultiHeadAttention(num_heads=heads, key_dim=width // heads)(x, x)
        x = layers.LayerNormalization()(layers.Add()([x, attention]))
        ffn = layers.Dense(width)(layers.Dense(4 * width, activation="gelu")(x))
        x = layers.LayerNormalization()(layers.Add()([x, ffn]))
    logits = layers.Dense(classes)(layers.Flatten()(x))
    return keras.Model(tokens, logits, name="classifier")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hw", default="tpuv4")
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--length", type=int, default=128)
    parser.add_argument("--width", type=int, default=256)
    parser.add_argument("--blocks", type=int, default=2)
    args = parser.parse_args()

    model = transformer_classifier(args.length, args.width, heads=4, blocks=args.blocks, vocabulary=8000, classes=4)
    model.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    print(f"{model.name}: {model.count_params():,} parameters, training on {args.hw}, batch {args.batch}")
    print(f"{'policy':<16} {'step ms':>9} {'HBM MiB':>9} {'peak MiB':>9} {'speed-up':>8}")
    baseline = None
    for policy in ("float32", "mixed_bfloat16"):
        mixed_precision.set_global_policy(policy)  # later runs use it, as in Keras
        try:
            report = model.run(batch=args.batch, hw=args.hw, instructions=False)
        finally:
            mixed_precision.set_global_policy("float32")
        assert report["precision"] == policy
        hbm = (report["hbm"]["bytes_read"] + report["hbm"]["bytes_written"]) / 2**20
        baseline = baseline or report["step_time_s"]
        print(f"{policy:<16} {report['step_time_s'] * 1e3:>9.3f} {hbm:>9.1f} "
              f"{report['memory']['peak_bytes'] / 2**20:>9.1f} {baseline / report['step_time_s']:>7.2f}x")


if __name__ == "__main__":
    main()
