import matplotlib.pyplot as plt

from training.core import plots


def test_file_name_keeps_letters_digits_dots_and_dashes_and_dashes_the_rest():
    assert (
        plots.file_name("routing-preset:second_order_lstm_dyck_m4", ".csv")
        == "routing-preset-second_order_lstm_dyck_m4.csv"
    )
    assert plots.file_name("pabs-a b/c?:d") == "pabs-a-b-c-d"
    assert plots.file_name("stack-lstm_m4-seed-0.5") == "stack-lstm_m4-seed-0.5"


def test_short_strings_get_every_label_upright_only_the_long_marks():
    fig, ax = plots.figure("t", "token", "y")
    ax.imshow([[0.0] * 4])
    assert plots.label_positions(ax, ["START", "(a", "a)", "END"]) == 1
    labels = ax.get_xticklabels()
    assert [t.get_text() for t in labels] == ["START", "(a", "a)", "END"]
    assert [t.get_rotation() for t in labels] == [90, 0, 0, 90]
    plt.close(fig)
