"""ffrsim: rigid–flexible multibody dynamics (floating frame of reference) for parallel robots.

Public API: build a model with :class:`ModelBuilder` (or load a model file with
:func:`load_model`), reach a configuration with :func:`solve_pose`, and ask it questions:
:func:`modes`, :func:`rigid_motion`, ...  See ``README.md`` and ``SPEC.md``.
"""
import os

# The matrices here are small (tens to hundreds of rows): threaded BLAS only adds
# synchronisation cost, and ruins timings when two processes share the two cores.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
# ... and when numpy was imported first, the environment is too late: limit the loaded pools.
from threadpoolctl import threadpool_limits  # noqa: E402

threadpool_limits(limits=1, user_api="blas")

from .assembly import assemble, solve_pose  # noqa: E402
from .beam import Section  # noqa: E402
from .dynamics import energy, mass_and_forces, mass_matrix, stiffness_matrix  # noqa: E402
from .errors import SimError  # noqa: E402
from .loader import load_model  # noqa: E402
from .modal import ModalResult, modes  # noqa: E402
from .model import Model, ModelBuilder  # noqa: E402
from .motion import RigidMotion, rigid_motion  # noqa: E402

__all__ = ["Model", "ModelBuilder", "Section", "SimError", "load_model", "assemble", "solve_pose", "modes",
           "ModalResult", "mass_matrix", "stiffness_matrix", "mass_and_forces", "energy", "rigid_motion",
           "RigidMotion"]
