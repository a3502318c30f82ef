from assessor.facts import Topology
from tests.support.builders import A100, gpus, node, run


def dgx_a100() -> Topology:
    """corpus/nvidia_smi_topo/01: DGX A100, two PXB NICs per GPU pair, SYS elsewhere."""
    gpu_names = [f"GPU{i}" for i in range(8)]
    nic_names = [f"NIC{i}" for i in range(12)]
    matrix: dict[str, dict[str, str]] = {}
    for i, g in enumerate(gpu_names):
        row = {h: ("X" if h == g else "NV12") for h in gpu_names}
        near = {f"NIC{2 * (i // 2)}", f"NIC{2 * (i // 2) + 1}"}
        row.update({n: ("PXB" if n in near else "SYS") for n in nic_names})
        matrix[g] = row
    return Topology(devices=gpu_names + nic_names, matrix=matrix, nic_names={f"NIC{i}": f"mlx5_{i}" for i in range(12)})


def test_dgx_a100_every_gpu_has_a_pxb_nic():
    r = run("topo.nic_affinity", node(topology=dgx_a100()))
    assert r.status == "pass"
    assert r.observed["GPU0"] == "PXB NIC0 (mlx5_0)"


def test_gpu_with_only_sys_nics_fails_naming_it():
    topo = dgx_a100()
    for nic in ("NIC6", "NIC7"):
        topo.matrix["GPU7"][nic] = "SYS"
    r = run("topo.nic_affinity", node(topology=topo, gpus=gpus(8, A100)))
    assert r.status == "fail"
    assert "GPU 7 (00000000:BD:00.0): nearest NIC NIC0 (mlx5_0) is SYS" in r.message


def test_max_hop_param_widens_or_narrows():
    assert run("topo.nic_affinity", node(topology=dgx_a100()), max_hop="PIX").status == "fail"
    topo = dgx_a100()
    for row in topo.matrix.values():
        for nic in topo.nic_names:
            if row[nic] == "PXB":
                row[nic] = "NODE"
    assert run("topo.nic_affinity", node(topology=topo)).status == "fail"
    assert run("topo.nic_affinity", node(topology=topo), max_hop="NODE").status == "pass"


def test_old_driver_names_nics_by_hca():
    # corpus/nvml/topo_m_legend_and_2gpu_nvlink.txt: NIC columns are mlx5_0.. themselves
    nics = [f"mlx5_{i}" for i in range(8)]
    paths = ["SYS", "SYS", "SYS", "SYS", "NODE", "NODE", "PXB", "PXB"]
    matrix = {
        g: {
            "GPU0": "X" if g == "GPU0" else "NV12",
            "GPU1": "X" if g == "GPU1" else "NV12",
            **dict(zip(nics, paths, strict=True)),
        }
        for g in ("GPU0", "GPU1")
    }
    topo = Topology(devices=["GPU0", "GPU1", *nics], matrix=matrix)
    r = run("topo.nic_affinity", node(topology=topo))
    assert r.status == "pass"
    assert r.observed["GPU1"] == "PXB mlx5_6"


def test_no_nics_in_matrix_skips():
    names = ["GPU0", "GPU1"]
    topo = Topology(devices=names, matrix={"GPU0": {"GPU1": "NV12"}, "GPU1": {"GPU0": "NV12"}})
    r = run("topo.nic_affinity", node(topology=topo))
    assert r.status == "skip"
    assert "NICs" in r.message


def test_bad_max_hop_errors():
    assert run("topo.nic_affinity", node(topology=dgx_a100()), max_hop="NV12").status == "error"


def test_topology_missing_skips_and_broken_errors():
    assert run("topo.nic_affinity", node()).status == "skip"
    assert run("topo.nic_affinity", node(problems={"topology": "no header row"})).status == "error"
