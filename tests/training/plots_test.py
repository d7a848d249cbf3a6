from training import plots


def test_file_name_keeps_letters_digits_dots_and_dashes_and_dashes_the_rest():
    assert (
        plots.file_name("routing-preset:second_order_lstm_dyck_m4", ".csv")
        == "routing-preset-second_order_lstm_dyck_m4.csv"
    )
    assert plots.file_name("pabs-a b/c?:d") == "pabs-a-b-c-d"
    assert plots.file_name("stack-lstm_m4-seed-0.5") == "stack-lstm_m4-seed-0.5"
