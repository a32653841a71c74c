//! Statistics over timing samples: min/median/mean/stddev/max and MAD outliers.
