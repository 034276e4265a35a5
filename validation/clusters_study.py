"""Run the clusters study (issue 29) and write its table.

    python validation/clusters_study.py --reps 200 --jobs 1 --out validation/results

Writes ``clusters.csv``: per cell (engine, G clusters, mu), interval and slope, the share
of fits that do not warn, the coverage of the unwarned fits' intervals with its MC s.e.,
the coverage of all fits and of statsmodels' non-private CR1 interval, the length over
that interval (all fits and unwarned fits), the share containing the non-private
estimate, and the verdict (:func:`dpreg.studies.unwarned.passes`); and prints it.
Finished chunks are cached, so an interrupted run resumes.
"""

from __future__ import annotations

import argparse

from dpreg.studies import get_study
from dpreg.studies.clusters import clusters_table
from dpreg.studies.unwarned import record_study, study_options

if __name__ == "__main__":
    parser = study_options(argparse.ArgumentParser(description=__doc__))
    record_study(get_study("clusters"), clusters_table, "clusters.csv", parser.parse_args())
