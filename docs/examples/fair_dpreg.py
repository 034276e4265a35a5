"""Fair's affairs data (bundled with statsmodels): the same analysis with dpreg."""
import pandas as pd
import statsmodels.api as sm

import dpreg

data = sm.datasets.fair.load_pandas().data
data["affair"] = (data["affairs"] > 0).astype(int)
# covariates on a unit scale with public constants (the questionnaire's coding)
data["rate"] = data["rate_marriage"] - 3
data["age10"] = (data["age"] - 30) / 10
data["yrs10"] = (data["yrs_married"] - 10) / 10
formula = "affair ~ rate + age10 + yrs10 + C(religious)"
# Public: the questionnaire's coding (Fair 1978), declared once for every model.
bounds = {"rate": (-2, 2), "age10": (-1.25, 1.2), "yrs10": (-0.95, 1.3)}
levels = {"religious": [1.0, 2.0, 3.0, 4.0]}

res = dpreg.dp_logit(formula, data, mu=1.0, bounds=bounds, levels=levels,
                     random_state=2024)
print(res.summary())
print(res.t_test("rate = 0, age10 = yrs10"))
print(res.f_test("C(religious)[T.2.0] = 0, C(religious)[T.3.0] = 0, "
                 "C(religious)[T.4.0] = 0"))
print(res.f_test("C(religious)[T.2.0] = 0, C(religious)[T.3.0] = 0, "
                 "C(religious)[T.4.0] = 0", method="rs"))

new = pd.DataFrame({"rate": [-1.0, 2.0], "age10": [0.2, 0.2], "yrs10": [-0.1, -0.1],
                    "religious": [1.0, 1.0]})
print(res.predict(new))
print(res.get_prediction(new).summary_frame())
try:
    res.get_margeff()                             # an average over the private rows
except dpreg.PrivateStatisticError as err:
    print("refused:", err)
print(res.get_margeff(at=new).summary_frame())    # at public covariate values

ols = dpreg.dp_ols("rate ~ age10 + yrs10 + C(religious)", data, mu=1.0,
                   bounds=bounds, levels=levels, random_state=2025)
print(dpreg.summary_col([ols, res], stars=True))

res.save("fair_logit.pickle")
back = dpreg.load_pickle("fair_logit.pickle")
print(back.predict(new))
try:
    print(res.prsquared)
except dpreg.PrivateStatisticError as err:
    print("refused:", err)
