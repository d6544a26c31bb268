"""The course's benchmarks: each module measures one thing and writes its report, a results
table with the machine and the seeds, to ``benchmarks/results/``. Run one from the repository
root as ``python -m benchmarks.<name>`` (``make benchmark`` runs them all). Importing a module does
no work: what it measures runs only from its ``main``.
"""
