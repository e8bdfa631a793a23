"""Temperature conversions."""

ABSOLUTE_ZERO_C = -273.15


def celsius_to_fahrenheit(celsius):
    """Degrees Celsius to degrees Fahrenheit."""
    return celsius * 9 / 5 + 32


def fahrenheit_to_celsius(fahrenheit):
    """Degrees Fahrenheit to degrees Celsius."""
    return (fahrenheit - 32) * 5 / 9


def kelvin_to_celsius(kelvin):
    """Kelvin to degrees Celsius."""
    if kelvin < 0:
        raise ValueError("kelvin cannot be negative: %r" % (kelvin,))
    return kelvin + ABSOLUTE_ZERO_C
