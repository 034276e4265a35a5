"""A Monte Carlo study of DP-SGD's intervals (the user guide's "Defining a study")."""
import numpy as np

import dpreg
import dpreg.studies as ds


def replicate(seed, *, n, mu, design):
    """One replication: simulate, fit privately and as an oracle."""
    data_seed, fit_seed = seed.spawn(2)
    sim = dpreg.datasets.simulate_linear(n, cov=design,
                                         random_state=np.random.default_rng(data_seed))
    model = dpreg.DPRegression.from_formula(sim.formula, sim.data)
    res = model.fit(mu=mu, x_bound=4.0, clip=6.0, random_state=fit_seed)
    truth = sim.params.to_numpy()
    return ds.result_rows(res, truth) + ds.result_rows(model.fit_oracle(), truth)


study = ds.Study(name="my-study", replicate=replicate,
                 grid={"design": ["identity", "toeplitz"], "n": [500, 1000]},
                 constants={"mu": 2.0}, reps=500, seed=2024)
