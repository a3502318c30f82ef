from assessor.facts import GpuInstance
from tests.support.builders import A100, H100, L40S, gpu, gpus, node, run


def gi(gpu_index: int, name: str, gi_id: int, profile_id: int | None = None) -> GpuInstance:
    return GpuInstance(gpu=gpu_index, gi_id=gi_id, profile_id=profile_id, name=name)


def test_mig_enabled_passes():
    r = run("mig.mode", node(gpus=gpus(2, A100, mig_mode_current=True, mig_mode_pending=True)))
    assert r.status == "pass"


def test_mig_pending_fails_with_reset_hint():
    facts = node(gpus=[gpu(0, A100, mig_mode_current=False, mig_mode_pending=True)])
    r = run("mig.mode", facts)
    assert r.status == "fail"
    assert "pending" in r.message
    assert "nvidia-smi -i N -r" in str(r.hint) and "reboot" in str(r.hint)


def test_mig_disabled_when_expected_fails():
    r = run("mig.mode", node(gpus=gpus(2, A100)))
    assert r.status == "fail"
    assert "-mig 1" in str(r.hint)


def test_mig_expected_off_passes_when_off():
    assert run("mig.mode", node(gpus=gpus(2, A100)), expected=False).status == "pass"


def test_mig_unsupported_gpu_fails_naming_the_model():
    r = run("mig.mode", node(gpus=gpus(1, L40S, mig_mode_current=None, mig_mode_pending=None)))
    assert r.status == "fail"
    assert r.message == "MIG not supported on NVIDIA L40S: GPU 0 (00000000:18:00.0)"


def test_mig_only_selected_gpus_are_checked():
    facts = node(gpus=[gpu(0, A100, mig_mode_current=True, mig_mode_pending=True), gpu(1, A100)])
    assert run("mig.mode", facts, gpus=[0]).status == "pass"
    r = run("mig.mode", facts, gpus=[0, 9])
    assert r.status == "fail"
    assert "GPU 9 not found" in r.message


def test_mig_mode_missing_skips_and_broken_errors():
    assert run("mig.mode", node()).status == "skip"
    assert run("mig.mode", node(problems={"gpus": "truncated XML"})).status == "error"


# corpus/nvml/mig_lgi_A100_40GB.txt style: names without the "MIG " prefix from -lgi
MIG_GPU = gpu(0, A100, mig_mode_current=True, mig_mode_pending=True)


def test_layout_list_matches_as_multiset():
    instances = [gi(0, "1g.5gb", 7, 19), gi(0, "3g.20gb", 1, 9), gi(0, "3g.20gb", 2, 9)]
    r = run("mig.layout", node(gpus=[MIG_GPU], mig_instances=instances), layout=["3g.20gb", "1g.5gb", "MIG 3g.20gb"])
    assert r.status == "pass"


def test_layout_mismatch_fails_with_create_command():
    instances = [gi(0, "1g.5gb", i, 19) for i in range(7, 14)]
    r = run("mig.layout", node(gpus=[MIG_GPU], mig_instances=instances), layout=["3g.20gb", "3g.20gb"])
    assert r.status == "fail"
    assert "1g.5gb x7" in r.message and "3g.20gb x2" in r.message
    assert "nvidia-smi mig -i 0 -cgi 3g.20gb,3g.20gb -C" in str(r.hint)


def test_layout_dict_per_gpu_and_string_keys():
    second = gpu(1, A100, mig_mode_current=True, mig_mode_pending=True)
    instances = [gi(0, "7g.40gb", 0, 0), gi(1, "4g.20gb", 1, 5), gi(1, "2g.10gb", 5, 14), gi(1, "1g.5gb", 13, 19)]
    layout = {"0": ["7g.40gb"], "1": ["1g.5gb", "4g.20gb", "2g.10gb"]}
    assert run("mig.layout", node(gpus=[MIG_GPU, second], mig_instances=instances), layout=layout).status == "pass"
    r = run("mig.layout", node(gpus=[MIG_GPU, second], mig_instances=instances[:1]), layout=layout)
    assert r.status == "fail"
    assert "GPU 1" in r.message and "no GPU instances" in r.message


def test_layout_on_node_without_mig_fails():
    r = run("mig.layout", node(gpus=gpus(2, A100), mig_instances=[]), layout=["7g.40gb"])
    assert r.status == "fail"
    assert "mig.mode" in str(r.hint)


def test_layout_without_param_is_a_profile_error():
    r = run("mig.layout", node(gpus=[MIG_GPU], mig_instances=[]))
    assert r.status == "error"
    assert "layout" in str(r.hint)


def test_layout_missing_instances_skips_and_broken_errors():
    assert run("mig.layout", node(gpus=[MIG_GPU]), layout=["7g.40gb"]).status == "skip"
    r = run("mig.layout", node(problems={"mig_instances": "nvidia-smi mig -lgi: exit 6"}), layout=["7g.40gb"])
    assert r.status == "error"


def _with_cis(instances: list[GpuInstance], cis: list[int] | None) -> list[GpuInstance]:
    """Each GPU instance with ``cis[i]`` compute instances (None: the capture could not tell)."""
    from assessor.facts import ComputeInstance

    for i, inst in enumerate(instances):
        if cis is not None:
            inst.compute_instances = [ComputeInstance(ci_id=c, name=inst.name) for c in range(cis[i])]
    return instances


H100_PLAN = ["3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"]


def _plan_node(cis: list[int] | None):
    instances = _with_cis([gi(0, name, n + 1) for n, name in enumerate(H100_PLAN)], cis)
    g = gpus(2, H100, mig_mode_current=False, mig_mode_pending=False)
    g[0].mig_mode_current = g[0].mig_mode_pending = True
    return node(gpus=g, mig_instances=instances)


def test_layout_with_compute_instances_required_passes_when_each_gi_has_one():
    r = run("mig.layout", _plan_node([1, 1, 1, 1]), layout=H100_PLAN, require_compute_instances=True)
    assert r.status == "pass", r.message


def test_layout_without_compute_instances_fails_when_required_naming_the_gi():
    facts = _plan_node([1, 0, 1, 0])
    assert run("mig.layout", facts, layout=H100_PLAN).status == "pass"  # GIs alone match the layout
    r = run("mig.layout", facts, layout=H100_PLAN, require_compute_instances=True)
    assert r.status == "fail"
    assert "GPU 0 instance 2 (2g.20gb) has no compute instance" in r.message
    assert r.hint and "nvidia-smi mig -i 0 -gi 2 -cci" in r.hint


def test_compute_instances_unknown_is_not_a_pass():
    r = run("mig.layout", _plan_node(None), layout=H100_PLAN, require_compute_instances=True)
    assert r.status == "fail"
    assert "compute instances unknown" in r.message


def test_compute_instances_from_the_xml_mig_devices_when_nvml_is_absent():
    facts = _plan_node(None)
    facts.mig_compute_gis = {0: [1, 2, 3, 4]}  # nvidia-smi -q -x: one MIG device per GPU instance
    assert run("mig.layout", facts, layout=H100_PLAN, require_compute_instances=True).status == "pass"
    facts.mig_compute_gis = {0: [1, 3]}
    r = run("mig.layout", facts, layout=H100_PLAN, require_compute_instances=True)
    assert r.status == "fail"
    assert "instance 2 (2g.20gb) has no compute instance" in r.message
    assert "instance 4 (1g.10gb) has no compute instance" in r.message
