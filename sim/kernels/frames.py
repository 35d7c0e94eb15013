"""Body frames: rotation matrices of unit quaternions and the configuration update ``q ⊕ dv``.
"""
import numpy as np
from numba import njit


@njit(cache=True)
def quat_R_into(q, i, R):
    """R (3, 3) <- rotation of the unit quaternion ``q[i:i+4]`` (no allocation)."""
    w, x, y, z = q[i], q[i + 1], q[i + 2], q[i + 3]
    R[0, 0] = 1 - 2 * (y * y + z * z)
    R[0, 1] = 2 * (x * y - w * z)
    R[0, 2] = 2 * (x * z + w * y)
    R[1, 0] = 2 * (x * y + w * z)
    R[1, 1] = 1 - 2 * (x * x + z * z)
    R[1, 2] = 2 * (y * z - w * x)
    R[2, 0] = 2 * (x * z - w * y)
    R[2, 1] = 2 * (y * z + w * x)
    R[2, 2] = 1 - 2 * (x * x + y * y)


@njit(cache=True)
def skew_into(x0, x1, x2, out):
    out[0, 0], out[0, 1], out[0, 2] = 0.0, -x2, x1
    out[1, 0], out[1, 1], out[1, 2] = x2, 0.0, -x0
    out[2, 0], out[2, 1], out[2, 2] = -x1, x0, 0.0


@njit(cache=True)
def integrate(q, dv, body_q, body_v, n_f, out):
    """``out = q ⊕ dv`` (see :func:`sim.model.kinematics.integrate`): R <- R exp(skew(dw_B))."""
    out[:] = q
    for b in range(body_q.size):
        qs, vs = body_q[b], body_v[b]
        for i in range(3):
            out[qs + i] += dv[vs + i]
        phi = dv[vs + 3:vs + 6]
        angle = np.sqrt(phi[0] ** 2 + phi[1] ** 2 + phi[2] ** 2)
        if angle < 1e-8:
            k = 0.5 - angle**2 / 48.0
        else:
            k = np.sin(0.5 * angle) / angle
        w2, x2, y2, z2 = np.cos(0.5 * angle), k * phi[0], k * phi[1], k * phi[2]
        w1, x1, y1, z1 = q[qs + 3], q[qs + 4], q[qs + 5], q[qs + 6]
        w = w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2
        x = w1 * x2 + w2 * x1 + y1 * z2 - z1 * y2
        y = w1 * y2 + w2 * y1 + z1 * x2 - x1 * z2
        z = w1 * z2 + w2 * z1 + x1 * y2 - y1 * x2
        norm = np.sqrt(w * w + x * x + y * y + z * z)
        out[qs + 3], out[qs + 4], out[qs + 5], out[qs + 6] = w / norm, x / norm, y / norm, z / norm
        for f in range(n_f[b]):
            out[qs + 7 + f] += dv[vs + 6 + f]
