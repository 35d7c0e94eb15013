"""Bauchau et al. (2016) spatial four-bar (hinge at C turned 5 deg about the follower's axis DC),
built in Exudyn 1.13.6 with geometrically exact 3D beams (ObjectBeamGeometricallyExact, two-node
elements): an independent check of ffrsim's models/four_bar.py (tests/data/four_bar_exudyn.csv is
its 16-element run at h = 5e-4 s, every 10 ms, and four_bar_exudyn_crank_sections.csv the crank's
mid-span section forces of that run up to 7.5 s; tests/test_locked.py compares).  Exudyn is not a
dependency of ffrsim: run this in an environment of its own (``python3 -m venv /tmp/exu &&
/tmp/exu/bin/pip install exudyn numpy``).

Nodes: NodeRigidBodyEP (Euler parameters, default).  NodeRigidBodyRotVecLG (--node rotvec) was the
first choice, but Exudyn 1.13.6's implicit generalized-alpha does not converge with it here: Newton
fails at the first step whenever nodes start with a velocity (even a lone driven crank), and for
8 elements per bar from rest too; lieGroupSimplifiedKinematicRelations / lieGroupAddTangentOperator
did not help.  exudyn.beams.GenerateBeamElementsAlongLine only builds 2D geometrically exact beams
(3D: "only works for 2D geometrically exact beam for now"), so the nodes and elements are built
here directly.

Model: each bar's nodes along the bar, node frame x along the bar (crank A->B, coupler B->C,
follower D->C), z = world z; section stiffness diag(EA, kGA, kGA, GJ, EI, EI), k = 5/6 (square),
J as ffrsim's Section.rectangle (Roark).  Joints are ObjectJointGeneric on MarkerNodeRigid:
A (ground-crank node 0) all six locked, its rotation about z prescribed by offsetUserFunction
(0.6 t, Tait-Bryan z offset of the joint frame; offsetUserFunction_t = 0.6); B and D revolute
about world z; C revolute about (sin 5 deg, 0, cos 5 deg) = R_y(5 deg) e_z, the joint frames given
by rotationMarker0/1 = R_node^T R_y(5 deg).  Initial state: undeformed, velocities of the rigid
parallelogram motion (crank and follower at 0.6 rad/s about A and D, the coupler translating;
meets every joint row but C's tilted axis), or zero (--initial-velocity zero).

Run with Exudyn's venv:  /tmp/exu/bin/python benchmarks/four_bar_exudyn.py --elements 8 --step 1e-3 --out exu.csv
Writes CSV columns t, x, y, z: the coupler's mid-span node position [s, m]; and (--out-sections)
t, N, Vy, Vz, T, My, Mz: the crank's mid-span section forces [s, N, N m] (see build()).
"""
import argparse
import warnings
import time

import numpy as np
import exudyn as exu
from exudyn.itemInterface import (NodeRigidBodyRotVecLG, NodeRigidBodyEP, NodePointGround, ObjectBeamGeometricallyExact,
                                  MarkerNodeRigid, ObjectJointGeneric, SensorNode, SensorBody)
from exudyn.rigidBodyUtilities import (RotationMatrix2RotationVector, RotationMatrix2EulerParameters,
                                       AngularVelocity2EulerParameters_t)

A, B, C, D = (np.array(p, dtype=float) for p in ((0, 0, 0), (0, 0.12, 0), (0.24, 0.12, 0), (0.24, 0, 0)))
E, NU, RHO = 207e9, 0.3, 7800.0
G = E / (2 * (1 + NU))
THICK, THIN = 0.016, 0.008
OMEGA = 0.6


def section(a, shear_factor):
    """exu.BeamSection of a solid square a x a: stiffness diag(EA, GAy, GAz, GJ, EIy, EIz), same
    torsion constant as ffrsim's Section.rectangle (Roark, square: 0.1406 a^4)."""
    Ar = a * a
    I = a**4 / 12.0
    J = a * a**3 * (1.0 / 3.0 - 0.21 * (1.0 - 1.0 / 12.0))
    s = exu.BeamSection()
    s.stiffnessMatrix = np.diag([E * Ar, shear_factor * G * Ar, shear_factor * G * Ar, G * J, E * I, E * I])
    s.inertia = np.diag([RHO * 2 * I, RHO * I, RHO * I])
    s.massPerLength = RHO * Ar
    return s


def frame(p, q):
    """Bar frame: x along p->q, z = world z (the bars lie in the x-y plane)."""
    ex = (q - p) / np.linalg.norm(q - p)
    ez = np.array([0.0, 0.0, 1.0])
    ey = np.cross(ez, ex)
    return np.column_stack([ex, ey, ez])


def build(n, shear_factor=5.0 / 6.0, tilt_deg=5.0, initial_velocity="parallelogram", joints="ABCD", node="rotvec"):
    SC = exu.SystemContainer()
    mbs = SC.AddSystem()
    bars = {}
    # rigid initial velocity field: crank and follower turn at OMEGA about z through A and D,
    # the coupler translates (the parallelogram's motion; meets every joint but C's tilted axis)
    vel = {"crank": (OMEGA, A), "coupler": (0.0, None), "follower": (OMEGA, D)}
    for name, p, q, a in (("crank", A, B, THICK), ("coupler", B, C, THICK), ("follower", D, C, THIN)):
        R = frame(p, q)
        rv = list(RotationMatrix2RotationVector(R))
        sec = section(a, shear_factor)
        nodes = []
        for k in range(n + 1):
            x = p + (q - p) * k / n
            if initial_velocity == "parallelogram":
                w, c = vel[name]
                v = np.cross([0, 0, w], x - c) if c is not None else np.array([-OMEGA * 0.12, 0.0, 0.0])
                omega_local = R.T @ np.array([0, 0, w])    # LG nodes: local angular velocity
                v0 = list(v) + list(omega_local)
            else:
                v0 = [0.0] * 6
            if node == "rotvec":
                nodes.append(mbs.AddNode(NodeRigidBodyRotVecLG(referenceCoordinates=list(x) + rv,
                                                               initialVelocities=v0)))
            else:   # Euler parameters: velocity coordinates are the parameters' rates
                ep = RotationMatrix2EulerParameters(R)
                ep_t = AngularVelocity2EulerParameters_t(R @ np.array(v0[3:]), ep)   # global omega
                nodes.append(mbs.AddNode(NodeRigidBodyEP(referenceCoordinates=list(x) + list(ep),
                                                         initialVelocities=list(v0[:3]) + list(ep_t))))
        L = np.linalg.norm(q - p) / n
        elements = []
        for k in range(n):
            elements.append(mbs.AddObject(ObjectBeamGeometricallyExact(nodeNumbers=[nodes[k], nodes[k + 1]], length=L,
                                                                       sectionData=sec)))
        bars[name] = (nodes, R)
        if name == "crank":
            crank_elements = elements

    gA = mbs.AddNode(NodePointGround(referenceCoordinates=list(A)))
    gD = mbs.AddNode(NodePointGround(referenceCoordinates=list(D)))
    mk = lambda node: mbs.AddMarker(MarkerNodeRigid(nodeNumber=node))
    I3 = np.eye(3)
    t = np.radians(tilt_deg)
    H = np.array([[np.cos(t), 0, np.sin(t)], [0, 1, 0], [-np.sin(t), 0, np.cos(t)]])  # hinge z -> (sin t, 0, cos t)

    cr, cp, fo = bars["crank"], bars["coupler"], bars["follower"]

    def drive(mbs, t, itemNumber, par):
        return [0, 0, 0, 0, 0, OMEGA * t]

    def drive_t(mbs, t, itemNumber, par):
        return [0, 0, 0, 0, 0, OMEGA]

    # A: ground-crank, all six locked, rotation about z prescribed (Tait-Bryan offset on joint frame)
    if "A" in joints: mbs.AddObject(ObjectJointGeneric(markerNumbers=[mk(gA), mk(cr[0][0])], constrainedAxes=[1] * 6,
                                     rotationMarker0=I3, rotationMarker1=cr[1].T,
                                     offsetUserFunction=drive, offsetUserFunction_t=drive_t))
    # B: crank-coupler revolute about world z
    if "B" in joints: mbs.AddObject(ObjectJointGeneric(markerNumbers=[mk(cr[0][-1]), mk(cp[0][0])], constrainedAxes=[1, 1, 1, 1, 1, 0],
                                     rotationMarker0=cr[1].T, rotationMarker1=cp[1].T))
    # C: coupler-follower revolute about the tilted hinge axis H e_z = (sin t, 0, cos t)
    if "C" in joints: mbs.AddObject(ObjectJointGeneric(markerNumbers=[mk(cp[0][-1]), mk(fo[0][-1])], constrainedAxes=[1, 1, 1, 1, 1, 0],
                                     rotationMarker0=cp[1].T @ H, rotationMarker1=fo[1].T @ H))
    # D: follower-ground revolute about world z
    if "D" in joints: mbs.AddObject(ObjectJointGeneric(markerNumbers=[mk(gD), mk(fo[0][0])], constrainedAxes=[1, 1, 1, 1, 1, 0],
                                     rotationMarker0=I3, rotationMarker1=fo[1].T))
    mid = cp[0][n // 2]
    sMid = mbs.AddSensor(SensorNode(nodeNumber=mid, storeInternal=True, outputVariableType=exu.OutputVariableType.Position))
    # crank mid-span section forces: ForceLocal / TorqueLocal of a two-node geometrically exact element
    # are its section resultants (stiffness times the element's constant strains, in the section's
    # local frame: x along A->B, z ~ world z, y = z x x ~ -world x; the resultant the part beyond
    # (larger x) exerts on the part before, N > 0 in tension), one value per element, that of its
    # mid-point; the mid-span node (n/2) gets the mean of its two elements (exact where the moment is
    # linear along the bar, static_check.py)
    sF = [mbs.AddSensor(SensorBody(bodyNumber=crank_elements[e], localPosition=[0, 0, 0], storeInternal=True,
                                   outputVariableType=v))
          for e in (n // 2 - 1, n // 2) for v in (exu.OutputVariableType.ForceLocal, exu.OutputVariableType.TorqueLocal)]
    mbs.Assemble()
    return SC, mbs, sMid, sF


def main():
    warnings.simplefilter("ignore", DeprecationWarning)  # rotationMarker0/1 still work in 1.13.6
    ap = argparse.ArgumentParser()
    ap.add_argument("--elements", type=int, default=4)
    ap.add_argument("--step", type=float, default=1e-3)
    ap.add_argument("--duration", type=float, default=12.0)
    ap.add_argument("--rho", type=float, default=0.9, help="generalized-alpha spectral radius rho_inf")
    ap.add_argument("--shear-factor", type=float, default=5.0 / 6.0)
    ap.add_argument("--tilt", type=float, default=5.0)
    ap.add_argument("--initial-velocity", choices=["parallelogram", "zero"], default="parallelogram")
    ap.add_argument("--rtol", type=float, default=1e-6,
                    help="Newton relative tolerance (Exudyn default 1e-8 stalls at round-off for 8+ elements per bar)")
    ap.add_argument("--modified-newton", type=int, default=0)
    ap.add_argument("--node", choices=["rotvec", "ep"], default="ep",
                    help="ep: NodeRigidBodyEP (default); rotvec: NodeRigidBodyRotVecLG (implicit GA only converges from zero initial velocities here)")
    ap.add_argument("--lg-simplified", type=int, default=0,
                    help="generalizedAlpha.lieGroupSimplifiedKinematicRelations (RotVecLG nodes only)")
    ap.add_argument("--lg-tangent", type=int, default=0, help="generalizedAlpha.lieGroupAddTangentOperator (needs --dense 1)")
    ap.add_argument("--dense", type=int, default=0, help="EXUdense linear solver instead of EigenSparse")
    ap.add_argument("--out", default="exu.csv")
    ap.add_argument("--out-sections", default="exu_crank_sections.csv",
                    help="CSV of the crank's mid-span section forces t, N, Vy, Vz, T, My, Mz [s, N, N m]")
    a = ap.parse_args()
    if a.elements % 2:
        raise SystemExit("elements must be even (mid-span node)")
    SC, mbs, sMid, sF = build(a.elements, a.shear_factor, a.tilt, a.initial_velocity, node=a.node)
    ss = exu.SimulationSettings()
    nsteps = int(round(a.duration / a.step))
    ss.timeIntegration.numberOfSteps = nsteps
    ss.timeIntegration.endTime = a.duration
    ss.timeIntegration.generalizedAlpha.spectralRadius = a.rho
    ss.timeIntegration.newton.relativeTolerance = a.rtol
    ss.timeIntegration.generalizedAlpha.lieGroupSimplifiedKinematicRelations = bool(a.lg_simplified)
    ss.timeIntegration.generalizedAlpha.lieGroupAddTangentOperator = bool(a.lg_tangent)
    ss.timeIntegration.newton.useModifiedNewton = a.modified_newton
    ss.timeIntegration.verboseMode = 1
    ss.solution.file.write = False
    ss.solution.sensors.writePeriod = a.step
    ss.linearSolver.solverType = exu.LinearSolverType.EXUdense if a.dense else exu.LinearSolverType.EigenSparse
    t0 = time.perf_counter()
    ok = mbs.SolveDynamic(ss, solverType=exu.DynamicSolverType.GeneralizedAlpha)
    wall = time.perf_counter() - t0
    data = mbs.GetSensorStoredData(sMid)
    np.savetxt(a.out, data[:, :4], delimiter=",", header="t,x,y,z", comments="", fmt="%.10e")
    F0, M0, F1, M1 = (mbs.GetSensorStoredData(k)[:, 1:4] for k in sF)
    sec = np.column_stack([data[:, 0], 0.5 * (F0 + F1), 0.5 * (M0 + M1)])
    np.savetxt(a.out_sections, sec, delimiter=",", header="t,N,Vy,Vz,T,My,Mz", comments="", fmt="%.10e")
    z = data[:, 3]
    print(f"ok={ok} n={a.elements} h={a.step} steps={nsteps} wall={wall:.2f}s per_step={wall / nsteps * 1e3:.3f}ms "
          f"zmin={z.min() * 1e3:.4f}mm@{data[z.argmin(), 0]:.3f}s zmax={z.max() * 1e3:.4f}mm@{data[z.argmax(), 0]:.3f}s")


if __name__ == "__main__":
    main()
