"""Solvers and algorithms on a model, each module named after the method or object it holds
(the scenario tables' names are the analyses', :mod:`sim.analyses`): rigid motion, modes and
their tracking, time integration (the compiled step loop), modal stepping (KED), the rigid
robot's reactions (inverse dynamics), harmonic response, damping, the closed servo loop,
sensitivities, least-squares fitting (identification), independent cases (sweeps)."""
