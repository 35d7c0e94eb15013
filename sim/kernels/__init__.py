"""Compiled physics kernels: pure functions over arrays (numba), no solver, no model object.

Each equation of the model lives here once; the public functions (:mod:`sim.model.dynamics`,
:mod:`sim.model.kinematics`, :mod:`sim.model.constraints`, :mod:`sim.model.springs`) allocate and call them, and
the compiled loops of the solvers call them directly.

* :mod:`~sim.kernels.frames`: rotation matrices, the configuration update ``q ⊕ dv``;
* :mod:`~sim.kernels.bodies`: mass blocks, forces and ``dQ/dv`` of the flexible bodies;
* :mod:`~sim.kernels.markers`: marker poses, local Jacobians, velocity-quadratic terms;
* :mod:`~sim.kernels.rows`: the joint primitives' constraint rows and ``gamma``;
* :mod:`~sim.kernels.springs`: lumped 6x6 springs and compliant actuators;
* :mod:`~sim.kernels.stretch`: geometric stiffening of beams;
* :mod:`~sim.kernels.equations`: the model's constant tables
  (:class:`~sim.kernels.equations.Tables`), the work arrays the kernels write
  (:class:`~sim.kernels.equations.Data`), all of the above at one state, and the potential
  energy;
* :mod:`~sim.kernels.lapack`, :mod:`~sim.kernels.common`: LAPACK's LU, small helpers.
"""
import hashlib
import os


KERNEL_DECORATORS = (b"\n@njit", b"\n@intrinsic", b"\n@overload")


def package_stamp(root):
    """SHA-256 of the source files under ``root`` that define compiled kernels (a line that
    starts with ``@njit``, ``@intrinsic`` or ``@overload``), with their relative paths."""
    digest = hashlib.sha256()
    for folder, subfolders, names in os.walk(root):
        subfolders[:] = sorted(d for d in subfolders if d != "__pycache__")
        for name in sorted(n for n in names if n.endswith(".py")):
            path = os.path.join(folder, name)
            with open(path, "rb") as f:
                text = b"\n" + f.read()
            if any(mark in text for mark in KERNEL_DECORATORS):
                digest.update(os.path.relpath(path, root).encode() + b"\0" + text)
    return digest.digest()


from sim.kernels import _numba  # noqa: E402  (after package_stamp, which a patch reads)

PATCHES = _numba.apply()
