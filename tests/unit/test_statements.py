"""clarifier/statements.py: AmbigNQ readings as statements, and the build's passages that use them."""

from askbetter.clarifier.statements import as_statement


def test_each_pattern_gives_its_statement_and_an_unfitted_question_none() -> None:
    assert as_statement("Who was the Indian Test Match captain in 2018", "Virat Kohli") == \
        "Virat Kohli was the Indian Test Match captain in 2018."
    assert as_statement("Where was the 2014 FIFA World Cup held?", "Brazil") == "The 2014 FIFA World Cup was held in Brazil."
    assert as_statement("When was the last time the cubs won", "2016") == "The last time the cubs won was in 2016."
    assert as_statement("When did the Chicago Fire Soccer Club start", "October 8, 1997.") == \
        "On October 8, 1997, the Chicago Fire Soccer Club start."
    assert as_statement("What is the name of the brightest star in lyra", "Vega") == \
        "The name of the brightest star in lyra is Vega."
    assert as_statement("How many teams qualify for the champions league", "four") == \
        "Four teams qualify for the champions league."
    assert as_statement("Name of the brightest star in lyra", "Vega") is None


def test_a_leading_phrase_moves_first_and_the_inverted_auxiliary_goes() -> None:
    assert as_statement("As of 2017, when was the last time the warriors won a championship", "2017") == \
        "As of 2017, the last time the warriors won a championship was in 2017."
    assert as_statement("In what city is the Orange Bowl held in 2016", "Miami Gardens") == \
        "In the city Miami Gardens, the Orange Bowl held in 2016."
    assert as_statement("What's the name of the cat with no hair", "Sphynx") == "The name of the cat with no hair is Sphynx."
    assert as_statement("Who did the Eagles play in the Superbowl", "Oakland Raiders") == \
        "Oakland Raiders is who the Eagles play in the Superbowl."
    assert as_statement("In 2017, who was the leader of the opposition", "Mallikarjun Kharge") == \
        "In 2017, Mallikarjun Kharge was the leader of the opposition."  # the answer's capital kept
    assert as_statement("When was the film released", "June 2016") == "The film was released in June 2016."
    assert as_statement("When was the film released", "June 5, 2016") == "The film was released on June 5, 2016."
    assert as_statement("What body of water do the tigris and euphrates flow into", "Arvand Rud") == \
        "In the body of water Arvand Rud, the tigris and euphrates flow into."
    assert as_statement("What happened to the titanic", "It sank") is None  # "happened" is no noun


def test_spaces_and_dots_after_the_answer_go() -> None:
    assert as_statement("Who originally sang stuck in the middle with you?", "Stealers Wheel .") == \
        "Stealers Wheel originally sang stuck in the middle with you."
