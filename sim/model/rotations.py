"""SO(3) helpers, batched over leading axes.

Quaternions are Euler parameters ``p = (w, x, y, z)`` with ``|p| = 1``; ``R(p)`` maps body
components to world components.  Rotation vectors ``phi`` are axis times angle [rad].
"""
import numpy as np


def cross(a, b):
    """Cross product over the last axis, broadcast; (..., 3) x (..., 3) -> (..., 3).

    Written out because ``np.cross`` spends tens of microseconds on axis bookkeeping, which
    dominates on the small batches of the dynamics kernels.
    """
    a0, a1, a2 = a[..., 0], a[..., 1], a[..., 2]
    b0, b1, b2 = b[..., 0], b[..., 1], b[..., 2]
    return np.stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], axis=-1)


def skew(w):
    """Cross-product matrix: ``skew(w) @ a == cross(w, a)``.  (..., 3) -> (..., 3, 3)."""
    w = np.asarray(w, dtype=float)
    S = np.zeros(w.shape[:-1] + (3, 3))
    S[..., 0, 1], S[..., 0, 2] = -w[..., 2], w[..., 1]
    S[..., 1, 0], S[..., 1, 2] = w[..., 2], -w[..., 0]
    S[..., 2, 0], S[..., 2, 1] = -w[..., 1], w[..., 0]
    return S


def quat_to_matrix(p):
    """Rotation matrix of unit quaternions.  (..., 4) -> (..., 3, 3)."""
    p = np.asarray(p, dtype=float)
    w, x, y, z = p[..., 0], p[..., 1], p[..., 2], p[..., 3]
    R = np.empty(p.shape[:-1] + (3, 3))
    R[..., 0, 0] = 1 - 2 * (y * y + z * z)
    R[..., 0, 1] = 2 * (x * y - w * z)
    R[..., 0, 2] = 2 * (x * z + w * y)
    R[..., 1, 0] = 2 * (x * y + w * z)
    R[..., 1, 1] = 1 - 2 * (x * x + z * z)
    R[..., 1, 2] = 2 * (y * z - w * x)
    R[..., 2, 0] = 2 * (x * z - w * y)
    R[..., 2, 1] = 2 * (y * z + w * x)
    R[..., 2, 2] = 1 - 2 * (x * x + y * y)
    return R


def quat_multiply(a, b):
    """Hamilton product ``a * b`` (rotation b first, then a).  (..., 4) x (..., 4) -> (..., 4)."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    w1, v1 = a[..., :1], a[..., 1:]
    w2, v2 = b[..., :1], b[..., 1:]
    w = w1 * w2 - np.sum(v1 * v2, axis=-1, keepdims=True)
    v = w1 * v2 + w2 * v1 + np.cross(v1, v2)
    return np.concatenate([w, v], axis=-1)


def quat_from_rotvec(phi):
    """Unit quaternion of the rotation vector ``phi``.  (..., 3) -> (..., 4)."""
    phi = np.asarray(phi, dtype=float)
    angle = np.linalg.norm(phi, axis=-1, keepdims=True)
    half = 0.5 * angle
    # sin(x)/x through its series near zero keeps the map smooth at phi = 0.
    small = angle < 1e-8
    k = np.where(small, 0.5 - angle**2 / 48.0, np.sin(half) / np.where(small, 1.0, angle))
    return np.concatenate([np.cos(half), k * phi], axis=-1)


def quat_from_matrix(R):
    """Unit quaternion (w >= 0) of a rotation matrix.  (3, 3) -> (4,)."""
    R = np.asarray(R, dtype=float)
    # Shepperd's method: pick the largest diagonal combination for stability.
    t = np.trace(R)
    d = np.diag(R)
    i = int(np.argmax([t, d[0], d[1], d[2]]))
    if i == 0:
        w = 0.5 * np.sqrt(1 + t)
        p = [w, (R[2, 1] - R[1, 2]) / (4 * w), (R[0, 2] - R[2, 0]) / (4 * w), (R[1, 0] - R[0, 1]) / (4 * w)]
    elif i == 1:
        x = 0.5 * np.sqrt(1 + 2 * d[0] - t)
        p = [(R[2, 1] - R[1, 2]) / (4 * x), x, (R[0, 1] + R[1, 0]) / (4 * x), (R[0, 2] + R[2, 0]) / (4 * x)]
    elif i == 2:
        y = 0.5 * np.sqrt(1 + 2 * d[1] - t)
        p = [(R[0, 2] - R[2, 0]) / (4 * y), (R[0, 1] + R[1, 0]) / (4 * y), y, (R[1, 2] + R[2, 1]) / (4 * y)]
    else:
        z = 0.5 * np.sqrt(1 + 2 * d[2] - t)
        p = [(R[1, 0] - R[0, 1]) / (4 * z), (R[0, 2] + R[2, 0]) / (4 * z), (R[1, 2] + R[2, 1]) / (4 * z), z]
    p = np.asarray(p)
    return p if p[0] >= 0 else -p


def matrix_from_rotvec(phi):
    """Rodrigues' formula.  (..., 3) -> (..., 3, 3)."""
    return quat_to_matrix(quat_from_rotvec(phi))


def rotvec_from_matrix(R):
    """Rotation vector of a rotation matrix (angle in [0, pi]).  (3, 3) -> (3,)."""
    p = quat_from_matrix(R)
    s = np.linalg.norm(p[1:])
    if s < 1e-12:
        return 2.0 * p[1:]
    return 2.0 * np.arctan2(s, p[0]) * p[1:] / s


def frame_from_axes(x, z_ref):
    """Right-handed frame with x along ``x`` and z as close as possible to ``z_ref``.

    Returns R (3, 3) whose columns are the unit axes x, y, z.  Raises ValueError when
    ``z_ref`` is parallel to ``x``.
    """
    x = np.asarray(x, dtype=float)
    x = x / np.linalg.norm(x)
    z = np.asarray(z_ref, dtype=float)
    z = z - x * (x @ z)
    nz = np.linalg.norm(z)
    if nz < 1e-9:
        raise ValueError(f"orientation vector {list(z_ref)} is parallel to the element axis {list(x)}")
    z = z / nz
    return np.column_stack([x, np.cross(z, x), z])
