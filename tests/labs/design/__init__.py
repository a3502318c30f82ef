"""Tests of the design graders (level-5 design labs graded by calculation)."""
