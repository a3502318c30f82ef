from assessor.facts import KernelModule, PerftestRow, PerftestRun
from tests.support.builders import A100, L40S, gpus, ib_port, ndr_ports, node, run


def test_all_ndr_ports_active_pass():
    r = run("ib.ports_active", node(ib_ports=ndr_ports()))
    assert r.status == "pass"
    assert r.observed["active"] == 8


def test_port_down_polling_fails_with_its_name():
    # corpus/ibstat/02: mlx5_11 State Down, Physical state Polling
    ports = [*ndr_ports(), ib_port("mlx5_11", state="Down", phys="Polling", rate=40)]
    r = run("ib.ports_active", node(ib_ports=ports))
    assert r.status == "fail"
    assert r.message == "mlx5_11 port 1 is Down (Polling)"
    assert "cable" in str(r.hint)


def test_initializing_linkup_means_no_subnet_manager():
    ports = [*ndr_ports(7), ib_port("mlx5_7", state="Initializing", phys="LinkUp")]
    r = run("ib.ports_active", node(ib_ports=ports))
    assert r.status == "fail"
    assert "opensm" in str(r.hint)


def test_disabled_ports_are_ignored_unless_listed():
    ports = [*ndr_ports(2), ib_port("mlx5_2", state="Down", phys="Disabled", layer="Ethernet")]
    assert run("ib.ports_active", node(ib_ports=ports)).status == "pass"
    r = run("ib.ports_active", node(ib_ports=ports), ports=["mlx5_2"])
    assert r.status == "fail"
    assert "mlx5_2 port 1 is Down (Disabled)" in r.message


def test_port_filters_and_missing_names():
    ports = [*ndr_ports(2), ib_port("mlx5_3", state="Down", phys="Polling", layer="Ethernet")]
    assert run("ib.ports_active", node(ib_ports=ports), link_layer="InfiniBand").status == "pass"
    assert run("ib.ports_active", node(ib_ports=ports), ports=["mlx5_0/1", "mlx5_1"]).status == "pass"
    r = run("ib.ports_active", node(ib_ports=ports), ports=["mlx5_9"])
    assert r.status == "fail"
    assert "mlx5_9 not found" in r.message


def test_min_ports_counts_active_ports():
    r = run("ib.ports_active", node(ib_ports=ndr_ports(4)), min_ports=8)
    assert r.status == "fail"
    assert "4 Active ports" in r.message


def test_no_ports_of_the_layer_fails():
    ports = [ib_port("mlx5_0", layer="Ethernet")]
    r = run("ib.ports_active", node(ib_ports=ports), link_layer="InfiniBand")
    assert r.status == "fail"
    assert "no InfiniBand ports" in r.message


def test_port_state_unknown_warns():
    ports = [*ndr_ports(1), ib_port("mlx5_1", state=None)]
    r = run("ib.ports_active", node(ib_ports=ports))
    assert r.status == "warn"
    assert "mlx5_1 port 1" in r.message


def test_ports_missing_skips_and_broken_errors():
    assert run("ib.ports_active", node()).status == "skip"
    r = run("ib.ports_active", node(problems={"ib_ports": "ibstat: ibpanic: [1234] main: stat of IB device failed"}))
    assert r.status == "error"


def test_rate_auto_is_400_on_h100():
    assert run("ib.rate", node(gpus=gpus(8), ib_ports=ndr_ports())).status == "pass"
    ports = [*ndr_ports(7), ib_port("mlx5_7", rate=200)]
    r = run("ib.rate", node(gpus=gpus(8), ib_ports=ports))
    assert r.status == "fail"
    assert "mlx5_7 port 1 at 200 Gb/s" in r.message
    assert r.expected == ">= 400 Gb/s"


def test_rate_auto_is_200_on_a100():
    ports = [ib_port(f"mlx5_{i}", rate=200) for i in range(4)]
    assert run("ib.rate", node(gpus=gpus(8, A100), ib_ports=ports)).status == "pass"


def test_rate_ignores_ethernet_and_down_ports():
    ports = [*ndr_ports(2), ib_port("mlx5_1x", rate=100, layer="Ethernet"), ib_port("mlx5_9", "Down", "Polling", 40)]
    assert run("ib.rate", node(gpus=gpus(8), ib_ports=ports)).status == "pass"


def test_rate_auto_without_a_reference_skips():
    r = run("ib.rate", node(gpus=gpus(4, L40S), ib_ports=ndr_ports()))
    assert r.status == "skip"
    assert "min_gbps" in r.message
    assert run("ib.rate", node(ib_ports=ndr_ports())).status == "skip"
    assert run("ib.rate", node(ib_ports=ndr_ports()), min_gbps=400).status == "pass"


def test_rate_without_active_ib_ports_skips():
    ports = [ib_port("mlx5_0", layer="Ethernet")]
    r = run("ib.rate", node(ib_ports=ports), min_gbps=400)
    assert r.status == "skip"
    assert "link_layer: Ethernet" in str(r.hint)


def test_rate_missing_and_broken():
    assert run("ib.rate", node(gpus=gpus(8))).status == "skip"
    assert run("ib.rate", node(problems={"ib_ports": "ibstat exit 255"})).status == "error"


def test_link_layer_ethernet_port_fails():
    ports = [*ndr_ports(2), ib_port("mlx5_5", layer="Ethernet")]
    r = run("ib.link_layer", node(ib_ports=ports))
    assert r.status == "fail"
    assert "mlx5_5 port 1 is Ethernet" in r.message
    assert "LINK_TYPE_P1=1" in str(r.hint)
    assert run("ib.link_layer", node(ib_ports=ports), ports=["mlx5_0", "mlx5_1"]).status == "pass"


def test_link_layer_roce_expected():
    ports = [ib_port("mlx5_0", layer="Ethernet")]
    assert run("ib.link_layer", node(ib_ports=ports), expected="Ethernet").status == "pass"


def test_link_layer_unknown_skips_and_broken_errors():
    assert run("ib.link_layer", node(ib_ports=[ib_port("mlx5_0", layer=None)])).status == "skip"
    assert run("ib.link_layer", node()).status == "skip"
    assert run("ib.link_layer", node(problems={"ib_ports": "bad"})).status == "error"


def test_peermem_loaded_passes_and_legacy_name_counts():
    assert run("ib.peermem", node(modules=[KernelModule("nvidia"), KernelModule("nvidia_peermem")])).status == "pass"
    assert run("ib.peermem", node(modules=[KernelModule("nv_peer_mem")])).status == "pass"


def test_peermem_absent_fails():
    r = run("ib.peermem", node(modules=[KernelModule("nvidia"), KernelModule("mlx5_ib")]))
    assert r.status == "fail"
    assert "modprobe nvidia_peermem" in str(r.hint)


def test_peermem_missing_and_broken():
    assert run("ib.peermem", node()).status == "skip"
    assert run("ib.peermem", node(problems={"modules": "lsmod.txt: empty"})).status == "error"


def perftest(avg: float, unit: str = "Gb/sec", size: int = 8388608) -> PerftestRun:
    return PerftestRun(
        test="RDMA_Write BW Test",
        device="mlx5_0",
        link_type="IB",
        unit=unit,
        rows=[PerftestRow(65536, 5000, avg * 0.9, avg * 0.8), PerftestRow(size, 5000, avg, avg)],
    )


def test_write_bw_h100_auto_threshold():
    assert run("ib.write_bw", node(gpus=gpus(8), ib_write_bw=perftest(391.2))).status == "pass"
    r = run("ib.write_bw", node(gpus=gpus(8), ib_write_bw=perftest(350.0)))
    assert r.status == "fail"
    assert r.expected == ">= 380 Gb/s"
    assert "mlx5_0" in r.message


def test_write_bw_mb_per_sec_is_converted():
    # perftest's MB is 2**20 bytes (format_factor 0x100000): 24000 MB/sec = 201.33 Gb/s, above A100's 180
    r = run("ib.write_bw", node(gpus=gpus(8, A100), ib_write_bw=perftest(24000, unit="MB/sec")))
    assert r.status == "pass"
    assert r.observed["gbits"] == 201.33


def test_write_bw_mb_per_sec_near_ndr_line_rate_passes_h100():
    # 46000 MiB/s is 385.9 Gb/s, above the H100 reference of 380; read as 10**6 bytes it would be
    # 368 Gb/s and fail a healthy NDR port.
    r = run("ib.write_bw", node(gpus=gpus(8), ib_write_bw=perftest(46000, unit="MB/sec")))
    assert r.status == "pass"
    assert r.observed["gbits"] == 385.88


def test_write_bw_small_messages_warn_not_fail():
    r = run("ib.write_bw", node(ib_write_bw=perftest(10.0, size=4096)), min_gbps=180)
    assert r.status == "warn"
    assert "-s 8388608" in str(r.hint)


def test_write_bw_no_rows_errors():
    assert run("ib.write_bw", node(ib_write_bw=PerftestRun()), min_gbps=180).status == "error"


def test_write_bw_missing_and_broken_and_no_reference():
    assert run("ib.write_bw", node(gpus=gpus(8))).status == "skip"
    assert run("ib.write_bw", node(problems={"ib_write_bw": "no header"})).status == "error"
    assert run("ib.write_bw", node(gpus=gpus(2, L40S), ib_write_bw=perftest(100))).status == "skip"


def test_no_subnet_manager_hint_does_not_blame_cables():
    # every port Initializing/LinkUp (sim fault no-subnet-manager): the shortfall below min_ports is
    # the SM's doing, so the hint must not send anyone to the cables
    ports = [ib_port(f"mlx5_{i}", state="Initializing", phys="LinkUp") for i in range(8)]
    r = run("ib.ports_active", node(ib_ports=ports), link_layer="InfiniBand", min_ports=8)
    assert r.status == "fail"
    assert "opensm" in str(r.hint)
    assert "Polling" not in str(r.hint) and "cable" not in str(r.hint)


def test_min_ports_shortfall_alone_still_hints_at_cables():
    r = run("ib.ports_active", node(ib_ports=ndr_ports(6)), min_ports=8)
    assert r.status == "fail"
    assert "6 Active ports, expected at least 8" in r.message
    assert "cable" in str(r.hint)


def test_link_layer_min_ports_tolerates_front_end_ethernet_nics():
    # corpus/ibstat/03: a healthy H100 node, 8 InfiniBand compute ports Active at 400 plus four
    # Ethernet front-end/storage ports; the shipped profiles must not fail it
    from assessor.parsers import ibstat
    from tests.support.corpus import read_corpus

    ports = ibstat.parse(read_corpus("ibstat/03_h100_mixed_ib_eth_some_disabled.txt")).ib_ports
    r = run("ib.link_layer", node(ib_ports=ports), expected="InfiniBand", min_ports=8)
    assert r.status == "pass"
    assert "8 ports are InfiniBand" in r.message and "mlx5_1" in r.message  # the others are named
    r = run("ib.link_layer", node(ib_ports=ports), expected="InfiniBand", min_ports=9)
    assert r.status == "fail"
    assert "8 InfiniBand ports, expected at least 9" in r.message
    assert "mlx5_1 port 1 is Ethernet" in r.message


def test_link_layer_without_min_ports_still_fails_every_odd_port():
    ports = [*ndr_ports(2), ib_port("mlx5_9", layer="Ethernet")]
    r = run("ib.link_layer", node(ib_ports=ports))
    assert r.status == "fail"
    assert r.message == "mlx5_9 port 1 is Ethernet"


def test_link_layer_min_ports_fails_when_too_few_ports_even_if_none_is_odd():
    r = run("ib.link_layer", node(ib_ports=ndr_ports(4)), min_ports=8)
    assert r.status == "fail"
    assert r.message == "4 InfiniBand ports, expected at least 8"
