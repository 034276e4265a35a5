"""Run the iv study (issue 29) and write its table.

    python validation/iv_study.py --reps 200 --jobs 1 --out validation/results

Writes ``iv-study.csv``: per cell (instrument strength, n, mu) and interval of the
endogenous regressor's coefficient, the share of fits that warned (and in which the
weak-instrument warning fired), the coverage of the unwarned fits' intervals with its
MC s.e., the coverage of all fits and of linearmodels' non-private IV2SLS interval, the
length over that interval, the share containing the non-private estimate, the verdict
(:func:`dpreg.studies.unwarned.passes`), and the design's first-stage F with the
median non-private and private F; and prints it. Finished chunks are cached, so an
interrupted run resumes.
"""

from __future__ import annotations

import argparse

from dpreg.studies import get_study
from dpreg.studies.iv import iv_table
from dpreg.studies.unwarned import record_study, study_options

if __name__ == "__main__":
    parser = study_options(argparse.ArgumentParser(description=__doc__))
    record_study(get_study("iv"), iv_table, "iv-study.csv", parser.parse_args())
