"""Keras's optimizers, as the training options of tpusim.run (docs/frontend.md).

Each maps to one of the optimizers tpusim's training graph builds (sgd, momentum, adam,
adagrad; frontend/train/optimizer.cpp). Others, such as RMSprop, are a tpusim.Error.
"""
from tpusim.keras.tensor import error


class Optimizer:
    def training_options(self):
        """tpusim.run's keywords for this optimizer."""
        raise NotImplementedError


class SGD(Optimizer):
    def __init__(self, learning_rate=0.01, momentum=0.0, nesterov=False):
        if not 0 <= momentum < 1:
            raise error(f"SGD momentum must be in [0, 1) (got {momentum})")
        self.learning_rate, self.momentum, self.nesterov = learning_rate, momentum, nesterov

    def training_options(self):
        if self.momentum == 0:
            if self.nesterov:
                raise error("SGD nesterov=True needs a momentum > 0")
            return {"optimizer": "sgd", "learning_rate": self.learning_rate}
        return {"optimizer": "momentum", "learning_rate": self.learning_rate, "momentum": self.momentum,
                "nesterov": self.nesterov}


class Adam(Optimizer):
    """Keras's weight_decay is decoupled (AdamW's)."""

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7, weight_decay=None):
        self.learning_rate, self.beta_1, self.beta_2, self.epsilon = learning_rate, beta_1, beta_2, epsilon
        self.weight_decay = weight_decay

    def training_options(self):
        options = {"optimizer": "adam", "learning_rate": self.learning_rate, "beta1": self.beta_1,
                   "beta2": self.beta_2, "epsilon": self.epsilon}
        if self.weight_decay:
            options.update(weight_decay=self.weight_decay, adamw=True)
        return options


class AdamW(Adam):
    def __init__(self, learning_rate=0.001, weight_decay=0.004, beta_1=0.9, beta_2=0.999, epsilon=1e-7):
        super().__init__(learning_rate, beta_1, beta_2, epsilon, weight_decay)


class Adagrad(Optimizer):
    def __init__(self, learning_rate=0.001, epsilon=1e-7):
        self.learning_rate, self.epsilon = learning_rate, epsilon

    def training_options(self):
        return {"optimizer": "adagrad", "learning_rate": self.learning_rate, "epsilon": self.epsilon}


BY_NAME = {"sgd": SGD, "adam": Adam, "adamw": AdamW, "adagrad": Adagrad}


def get(identifier):
    """An Optimizer from an instance or its Keras name (with Keras's default hyperparameters)."""
    if isinstance(identifier, Optimizer):
        return identifier
    if isinstance(identifier, str) and identifier.lower() in BY_NAME:
        return BY_NAME[identifier.lower()]()
    raise error(f"optimizer '{identifier}' is not supported (supported: {', '.join(BY_NAME)}, or their classes "
                "in tpusim.keras.optimizers)")
