"""Connection plugins: ``gpulab_ssh`` (Ansible's ``ssh``, each remote command under gpulab's guard)."""
