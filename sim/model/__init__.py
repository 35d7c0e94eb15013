"""The model: building it (:mod:`~sim.model.builder`, beam sections), its kernel tables, and the
public functions of its equations (kinematics, dynamics, constraints, springs, the compiled
evaluator) and of its configurations (assembly).  Nothing here calls a solver."""
from sim.model.builder import JOINT_ROWS, POSE_KINDS, ModelBuilder
from sim.model.types import Actuator, Body, BodyGroup, Joint, Marker, Model, Sensor, Spring

__all__ = ["JOINT_ROWS", "POSE_KINDS", "Actuator", "Body", "BodyGroup", "Joint", "Marker", "Model", "ModelBuilder",
           "Sensor", "Spring"]
