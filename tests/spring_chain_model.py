r"""Two rigid masses on lumped springs along z (test model for FRF, damping and identification).

ground --k1-- mass 1 (m1) --k2-- mass 2 (m2), every spring a 6x6 diagonal stiffness: axial
(z) k1 = ``k1 * scale_a * scale_b`` and ``k2``, lateral and rotational ``k_lateral`` and
``k_rotation`` (stiff: the two axial modes are the lowest), twist (about z) of spring 1
``k_twist``.  Axial modes are the 2-dof chain's closed form; ``scale_a, scale_b`` enter only
as a product and ``k_twist`` only in torsion modes (non-identifiable on purpose).
"""
import numpy as np

from sim import ModelBuilder


def build(k1=1.0e4, k2=2.0e4, m1=1.0, m2=2.0, k_twist=1.0e4, scale_a=1.0, scale_b=1.0, c1=0.0,
          k_lateral=1.0e7, k_rotation=1.0e8):
    b = ModelBuilder("spring_chain", gravity=(0.0, 0.0, 0.0))
    inertia = 0.01 * np.eye(3)
    b.add_rigid_body("mass1", m1, (0, 0, -1.0), m1 * inertia, position=(0, 0, -1.0))
    b.add_rigid_body("mass2", m2, (0, 0, -2.0), m2 * inertia, position=(0, 0, -2.0))
    b.add_marker("G", None, (0, 0, 0))
    b.add_marker("A", "mass1", (0, 0, 0))
    b.add_marker("B", "mass1", (0, 0, -1.0))
    b.add_marker("C", "mass2", (0, 0, -1.0))
    b.add_marker("P1", "mass1", (0, 0, -1.0))
    b.add_marker("P2", "mass2", (0, 0, -2.0))
    kl, kr = k_lateral, k_rotation
    b.add_spring("s1", "G", "A", np.diag([kl, kl, k1 * scale_a * scale_b, kr, kr, k_twist]),
                 damping=np.diag([0, 0, c1, 0, 0, 0]))
    b.add_spring("s2", "B", "C", np.diag([kl, kl, k2, kr, kr, 2.0e5]))
    b.set_end_effector("P2", ("x", "y", "z"))
    return b.build()
