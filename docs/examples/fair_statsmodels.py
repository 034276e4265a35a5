"""Fair's affairs data (bundled with statsmodels): the analysis in statsmodels."""
import pandas as pd
import statsmodels.api as sm
import statsmodels.formula.api as smf
from statsmodels.iolib.summary2 import summary_col

data = sm.datasets.fair.load_pandas().data
data["affair"] = (data["affairs"] > 0).astype(int)
# covariates on a unit scale with public constants (the questionnaire's coding)
data["rate"] = data["rate_marriage"] - 3
data["age10"] = (data["age"] - 30) / 10
data["yrs10"] = (data["yrs_married"] - 10) / 10
formula = "affair ~ rate + age10 + yrs10 + C(religious)"

res = smf.logit(formula, data).fit(disp=0)
print(res.summary())
print(res.t_test("rate = 0, age10 = yrs10"))
print(res.f_test("C(religious)[T.2.0] = 0, C(religious)[T.3.0] = 0, "
                 "C(religious)[T.4.0] = 0"))

new = pd.DataFrame({"rate": [-1.0, 2.0], "age10": [0.2, 0.2], "yrs10": [-0.1, -0.1],
                    "religious": [1.0, 1.0]})
print(res.predict(new))
print(res.get_prediction(new).summary_frame())
print(res.get_margeff().summary_frame())          # averaged over the sample

ols = smf.ols("rate ~ age10 + yrs10 + C(religious)", data).fit()
print(summary_col([ols, res], stars=True))

res.save("fair_logit.pickle")
back = sm.load_pickle("fair_logit.pickle")
print(back.predict(new))
print(res.rsquared if hasattr(res, "rsquared") else res.prsquared)
