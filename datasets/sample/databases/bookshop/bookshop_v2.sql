-- Sample database 'bookshop', file bookshop_v2.sql: same schema as every file in this folder, different rows.
-- Written for baton's sample set; materialized into bookshop/<file>.sqlite by baton-data.

CREATE TABLE author (
    author_id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    country TEXT,
    birth_year INTEGER
);

CREATE TABLE book (
    book_id INTEGER PRIMARY KEY,
    title TEXT NOT NULL,
    author_id INTEGER NOT NULL REFERENCES author (author_id),
    genre TEXT,
    published_year INTEGER,
    price REAL,
    pages INTEGER
);

CREATE TABLE sale (
    sale_id INTEGER PRIMARY KEY,
    book_id INTEGER NOT NULL REFERENCES book (book_id),
    store TEXT,
    quantity INTEGER,
    sale_month TEXT
);

INSERT INTO author VALUES (1, 'Lena Castell', 'Italy', 1988);
INSERT INTO author VALUES (2, 'Pavel Lindqvist', 'Canada', 1938);
INSERT INTO author VALUES (3, 'Sunniva Berg', 'Sweden', 1949);
INSERT INTO author VALUES (4, 'Ada Nwosu', 'Portugal', 1989);
INSERT INTO author VALUES (5, 'Oskar Ferreira', 'Nigeria', 1933);
INSERT INTO author VALUES (6, 'Tomas Vell', 'Nigeria', 1971);
INSERT INTO author VALUES (7, 'Hugo Marchetti', 'Sweden', 1964);
INSERT INTO author VALUES (8, 'Rafael Quint', 'Estonia', 1943);

INSERT INTO book VALUES (1, 'Hidden River', 6, 'history', 1973, 15.0, 336);
INSERT INTO book VALUES (2, 'Paper Archive', 2, 'mystery', 1976, 24.5, 244);
INSERT INTO book VALUES (3, 'Paper Compass', 2, 'poetry', 2004, 24.5, 332);
INSERT INTO book VALUES (4, 'The Salt Meridian', 7, 'poetry', 1967, 18.9, 127);
INSERT INTO book VALUES (5, 'The Last Lantern', 4, 'poetry', 2014, 22.0, 533);
INSERT INTO book VALUES (6, 'The Last Orchard', 1, 'fantasy', 1969, 8.5, 566);
INSERT INTO book VALUES (7, 'Northern Garden', 3, 'history', 1984, 8.5, 568);
INSERT INTO book VALUES (8, 'Winter Meridian', 4, 'history', 1992, 8.5, 575);
INSERT INTO book VALUES (9, 'The Silent Lantern', 1, 'mystery', 1962, 14.25, 281);
INSERT INTO book VALUES (10, 'The Glass Harbour', 6, 'history', 2003, 12.5, 609);
INSERT INTO book VALUES (11, 'Distant Tower', 3, 'fantasy', 2006, 8.5, 433);
INSERT INTO book VALUES (12, 'The Last Tower', 2, 'science', 2005, 18.9, 445);
INSERT INTO book VALUES (13, 'Crimson Letters', 6, 'poetry', 1973, 12.5, 524);
INSERT INTO book VALUES (14, 'Hidden Compass', 2, 'science', 2009, 12.5, 575);

INSERT INTO sale VALUES (1, 6, 'Old Town', 5, '2023-08');
INSERT INTO sale VALUES (2, 2, 'Harbor Street', 5, '2023-09');
INSERT INTO sale VALUES (3, 9, 'Station Kiosk', 11, '2023-08');
INSERT INTO sale VALUES (4, 10, 'Station Kiosk', 10, '2023-03');
INSERT INTO sale VALUES (5, 9, 'Old Town', 3, '2023-08');
INSERT INTO sale VALUES (6, 11, 'Old Town', 1, '2023-03');
INSERT INTO sale VALUES (7, 14, 'Station Kiosk', 4, '2023-04');
INSERT INTO sale VALUES (8, 10, 'Old Town', 8, '2023-02');
INSERT INTO sale VALUES (9, 4, 'Station Kiosk', 4, '2023-04');
INSERT INTO sale VALUES (10, 3, 'Harbor Street', 2, '2023-10');
INSERT INTO sale VALUES (11, 5, 'Harbor Street', 12, '2023-08');
INSERT INTO sale VALUES (12, 2, 'Old Town', 6, '2023-11');
INSERT INTO sale VALUES (13, 5, 'Old Town', 1, '2023-08');
INSERT INTO sale VALUES (14, 12, 'Harbor Street', 8, '2023-11');
INSERT INTO sale VALUES (15, 8, 'Station Kiosk', 11, '2023-04');
INSERT INTO sale VALUES (16, 2, 'Station Kiosk', 3, '2023-06');
INSERT INTO sale VALUES (17, 10, 'Old Town', 9, '2023-07');
INSERT INTO sale VALUES (18, 4, 'Old Town', 6, '2023-04');
INSERT INTO sale VALUES (19, 14, 'Harbor Street', 3, '2023-11');
INSERT INTO sale VALUES (20, 2, 'Station Kiosk', 12, '2023-08');
INSERT INTO sale VALUES (21, 11, 'Harbor Street', 6, '2023-07');
INSERT INTO sale VALUES (22, 9, 'Harbor Street', 9, '2023-08');
