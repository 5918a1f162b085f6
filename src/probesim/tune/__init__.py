"""``probesim tune``: an Optuna search of a workload's probe settings (and its DestinationRule's
outlier detection), judged by simulation.

    inputs.py     manifests, the optional scenario, the workload, where it came from (Helm)
    space.py      what may change and within which bounds; a setting sampled from a trial
    patch.py      a setting as strategic-merge / JSON merge patches, applied as the API server does
    objective.py  the runs that judge a setting and its three figures
    study.py      the study in Optuna's storage, one seeded trial at a time, the front, the choice
    report.py     the front, current vs recommended, the patches and commands
    command.py    the command's work (cli.py declares the options)
"""
