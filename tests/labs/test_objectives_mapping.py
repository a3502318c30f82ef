"""The exam-domain mapping follows NVIDIA's NCP-AII study guide: MIG is Physical Layer Management (2.2, with
BlueField), cables and transceivers are Bring-up (1.8) and Cluster Test (4.4, 4.5, 4.8); and every exam the
overall level counts is one the candidate report can fit."""

from __future__ import annotations

from fractions import Fraction

from assessor.labs import levels
from assessor.reports.content import load_data


def test_mig_trains_physical_layer_management_and_infiniband_bring_up() -> None:
    rules = levels.load_rules()
    assert "NCP-AII: Physical Layer Management" in rules.trains["mig"]
    assert "NCP-AII: System and Server Bring-up" not in rules.trains["mig"]
    assert "NCP-AII: System and Server Bring-up" in rules.trains["infiniband"]
    assert "NCP-AII: Physical Layer Management" not in rules.trains["infiniband"]
    assert "NCP-AII: Cluster Test and Verification" in rules.trains["infiniband"]


def test_the_fix_moves_the_lab_domain_weights() -> None:
    weights = levels.domain_weights(levels.load_rules())
    shown = {d: round(float(w * 100), 1) for d, w in weights.items()}
    # mig 12.1 and infiniband 20.8 with MIG under Bring-up; 8.8 and 24.1 once fixed; the control-plane domains
    # (slurm, containers) then took their share of Control Plane, Administration, Workload and Troubleshooting
    assert shown["mig"] == 5.8 and shown["infiniband"] == 24.1
    assert shown["drivers"] == 20.5 and shown["health"] == 14.7
    assert shown["slurm"] == 11.1 and shown["containers"] == 6.2
    assert sum(weights.values()) == Fraction(1)


def test_every_exam_the_overall_level_counts_has_a_certification_level() -> None:
    counted = set(levels.load_rules().overall_exams)
    listed = {str(e["exam"]): int(e["level"]) for e in load_data("certifications.yaml")["exams"]}
    assert counted <= set(listed)
    assert listed["NCP-AIN"] == 3  # a professional exam, as NCP-AII and NCP-AIO
