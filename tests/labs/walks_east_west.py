"""Walks of the east-west lab (nccl-404): the node and its peer node02 on one fabric, made by the lab's start
(condition peer-node). Merged into the shared tables by :mod:`tests.labs.walks` and
:mod:`tests.labs.walks_left_broken`."""

from __future__ import annotations

from tests.labs.walks import H100_RAILS, ROOT_NCCL_CONF, Walk, conf

EAST_WEST = (
    "mpirun --allow-run-as-root -np 16 -H localhost:8,node02:8 -x NCCL_DEBUG=INFO all_reduce_perf -b 1G -e 8G -f 2 -g 1"
)

WALKS: dict[str, dict[str, list[Walk]]] = {
    "nccl-404": {
        "alternatives": [
            # measured first, rail by rail and as the ring, then the two rails put back
            [
                "ib_write_bw -d mlx5_6 --report_gbits -s 8388608 node02",
                EAST_WEST,
                conf(f"NCCL_IB_HCA={H100_RAILS}", "NCCL_SOCKET_IFNAME=eno1", "NCCL_NVLS_ENABLE=1"),
                EAST_WEST,
            ],
            [conf("NCCL_SOCKET_IFNAME=eno1", "NCCL_NVLS_ENABLE=1", "NCCL_NET_GDR_LEVEL=PXB")],  # the list removed
            [conf("NCCL_IB_HCA=mlx5", "NCCL_NVLS_ENABLE=1")],  # a prefix: every mlx5 device, all eight rails
        ],
        "wrong": [
            # the two rails on the command line only: the next job runs on six again
            [
                f"mpirun --allow-run-as-root -np 16 -H localhost:8,node02:8 -x NCCL_IB_HCA={H100_RAILS} "
                "all_reduce_perf -g 1"
            ],
            [conf("NCCL_IB_HCA=mlx5_0,mlx5_1,mlx5_2,mlx5_3,mlx5_4,mlx5_5,mlx5_6", "NCCL_NVLS_ENABLE=1")],  # 7 of 8
            [conf("NCCL_IB_HCA=^mlx5_6,mlx5_7", "NCCL_NVLS_ENABLE=1")],  # the two excluded instead
            ["ib_write_bw -d mlx5_6 --report_gbits node02", "ib_write_bw -d mlx5_7 --report_gbits node02"],
            [{ROOT_NCCL_CONF: f"NCCL_IB_HCA={H100_RAILS}\n"}],  # root's own file: the node's jobs still on six
        ],
    },
}

# The task done, the node left worse: (walk, the check whose message must say why).
LEFT_BROKEN: dict[str, list[tuple[Walk, str]]] = {
    # the rails back, and nvidia_peermem unloaded "to reset GPUDirect": the east-west ring stages through memory
    "nccl-404": [
        ([conf(f"NCCL_IB_HCA={H100_RAILS}", "NCCL_NVLS_ENABLE=1"), "modprobe -r nvidia_peermem"], "ib.peermem")
    ],
}
