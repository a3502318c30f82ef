"""Ansible plugins gpulab puts on Ansible's path for its own runs (:mod:`assessor.targets.ansible`)."""
