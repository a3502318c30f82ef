"""What the tests share: builders of facts, real-output snapshots, the corpus index, the loopback sshd test bed."""
