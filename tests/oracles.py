"""Plain numpy statements of equations the compiled kernels (``sim.kernels``) implement: test
oracles only, written for clarity, not speed (issue 15: each equation once in ``sim/``)."""
import numpy as np


def stretch_terms(qf, A, k, G):
    """Geometric stiffening of one body (:mod:`sim.dynamics` docstring): force (n,), tangent
    stiffness (n, n), extra potential [J]; ``A`` (n_e, n), ``k`` (n_e,), ``G`` (n_e, n, n)."""
    Gq = np.einsum("eab,b->ea", G, qf)
    du, g = A @ qf, Gq @ qf
    N = k * (du + 0.5 * g)
    force = -(0.5 * k * g) @ A - N @ Gq
    AG = A + Gq
    tangent = np.einsum("e,eab->ab", N, G) + AG.T @ (k[:, None] * AG) - A.T @ (k[:, None] * A)
    return force, tangent, float(np.sum(0.5 * k * du * g + 0.125 * k * g**2))
