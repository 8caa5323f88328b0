"""Optimizers: the course's SGD with momentum and Adam, as problem set 08 asks for them.

Each one holds a list of parameters (anything with ``.data`` and ``.grad``, such as a
Value) and keeps its own state in plain floats, one entry per parameter. ``step()``
moves every parameter using its current ``grad``; ``zero_grad()`` sets every ``grad`` to
0.0. The names and defaults are PyTorch's (``torch.optim.SGD``, ``torch.optim.Adam``).

This file imports nothing, so that its text can also be run on its own: the hidden tests
send it to a kernel as the course's version of these two exercises.
"""


class SGD:
    """Gradient descent with momentum, PyTorch's way: v = momentum * v + grad, then
    p -= lr * v. With momentum 0 it is plain gradient descent."""

    def __init__(self, params, lr, momentum=0.0):
        self.params = list(params)  # a list of its own: the caller's may change
        self.lr = lr
        self.momentum = momentum
        self.velocity = [0.0 for _ in self.params]  # one per parameter, from rest

    def step(self):
        for i, p in enumerate(self.params):
            self.velocity[i] = self.momentum * self.velocity[i] + p.grad  # v = mu v + g
            p.data -= self.lr * self.velocity[i]  # p moves against the new velocity

    def zero_grad(self):
        for p in self.params:
            p.grad = 0.0


class Adam:
    """Adam (Kingma and Ba, 2015), with bias correction, as torch.optim.Adam computes it."""

    def __init__(self, params, lr=0.001, betas=(0.9, 0.999), eps=1e-8):
        self.params = list(params)
        self.lr = lr
        self.beta1, self.beta2 = betas
        self.eps = eps
        self.m = [0.0 for _ in self.params]  # running mean of the gradient
        self.v = [0.0 for _ in self.params]  # running mean of the squared gradient
        self.t = 0  # steps taken so far

    def step(self):
        self.t += 1  # the first step is t = 1
        fix1 = 1 - self.beta1**self.t  # bias correction: m and v start at 0
        fix2 = 1 - self.beta2**self.t
        for i, p in enumerate(self.params):
            g = p.grad
            self.m[i] = self.beta1 * self.m[i] + (1 - self.beta1) * g  # m = b1 m + (1-b1) g
            self.v[i] = self.beta2 * self.v[i] + (1 - self.beta2) * g * g  # v: of g squared
            m_hat = self.m[i] / fix1  # unbiased estimates of the two means
            v_hat = self.v[i] / fix2
            p.data -= self.lr * m_hat / (v_hat**0.5 + self.eps)  # a step of about lr

    def zero_grad(self):
        for p in self.params:
            p.grad = 0.0
