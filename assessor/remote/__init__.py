"""Remote nodes over SSH (paramiko): batched capture, host-key policy, fleet fan-out."""
