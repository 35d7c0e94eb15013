"""Solvers and algorithms on a model: rigid motion, modes and their tracking, time integration
(the compiled step loop), kineto-elastodynamics, inverse dynamics, frequency response, damping,
design sensitivities, identification, sweeps."""
