-- Sample database 'bookshop', file bookshop.sql: same schema as every file in this folder, different rows.
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

INSERT INTO author VALUES (1, 'Oskar Ferreira', 'Norway', 1937);
INSERT INTO author VALUES (2, 'Rafael Quint', 'Sweden', 1940);
INSERT INTO author VALUES (3, 'Mira Okafor', 'Nigeria', 1989);
INSERT INTO author VALUES (4, 'Sunniva Berg', 'Estonia', 1934);
INSERT INTO author VALUES (5, 'Ada Nwosu', 'Sweden', 1963);
INSERT INTO author VALUES (6, 'Ines Halloran', 'Italy', 1990);
INSERT INTO author VALUES (7, 'Hugo Marchetti', 'Canada', 1984);
INSERT INTO author VALUES (8, 'Tomas Vell', 'Nigeria', 1930);

INSERT INTO book VALUES (1, 'Northern Meridian', 6, 'science', 2018, 24.5, 276);
INSERT INTO book VALUES (2, 'The Salt Orchard', 4, 'history', 1955, 22.0, 125);
INSERT INTO book VALUES (3, 'Crimson Lantern', 6, 'science', 1967, 18.9, 140);
INSERT INTO book VALUES (4, 'The Silent Harbour', 2, 'science', 2013, 9.99, 569);
INSERT INTO book VALUES (5, 'The Last Lantern', 6, 'science', 1981, 24.5, 341);
INSERT INTO book VALUES (6, 'The Salt Garden', 8, 'history', 1991, 15.0, 433);
INSERT INTO book VALUES (7, 'Paper Tower', 1, 'mystery', 1976, 15.0, 343);
INSERT INTO book VALUES (8, 'Winter Archive', 6, 'fantasy', 2007, 15.0, 366);
INSERT INTO book VALUES (9, 'Paper Archive', 4, 'history', 1976, 8.5, 263);
INSERT INTO book VALUES (10, 'Winter Harbour', 7, 'poetry', 1982, 15.0, 329);
INSERT INTO book VALUES (11, 'The Last Tower', 7, 'fantasy', 2009, 8.5, 197);
INSERT INTO book VALUES (12, 'The Glass Tower', 7, 'history', 2002, 12.5, 291);
INSERT INTO book VALUES (13, 'Distant Orchard', 4, 'poetry', 2002, 8.5, 603);
INSERT INTO book VALUES (14, 'The Silent Tower', 1, 'poetry', 2017, 12.5, 431);

INSERT INTO sale VALUES (1, 10, 'Harbor Street', 12, '2023-02');
INSERT INTO sale VALUES (2, 2, 'Station Kiosk', 4, '2023-08');
INSERT INTO sale VALUES (3, 12, 'Old Town', 11, '2023-05');
INSERT INTO sale VALUES (4, 10, 'Old Town', 5, '2023-03');
INSERT INTO sale VALUES (5, 4, 'Harbor Street', 8, '2023-03');
INSERT INTO sale VALUES (6, 10, 'Old Town', 10, '2023-08');
INSERT INTO sale VALUES (7, 2, 'Old Town', 3, '2023-06');
INSERT INTO sale VALUES (8, 8, 'Old Town', 4, '2023-06');
INSERT INTO sale VALUES (9, 12, 'Harbor Street', 12, '2023-05');
INSERT INTO sale VALUES (10, 10, 'Old Town', 10, '2023-06');
INSERT INTO sale VALUES (11, 6, 'Harbor Street', 10, '2023-04');
INSERT INTO sale VALUES (12, 2, 'Station Kiosk', 2, '2023-05');
INSERT INTO sale VALUES (13, 6, 'Harbor Street', 6, '2023-08');
INSERT INTO sale VALUES (14, 14, 'Station Kiosk', 9, '2023-01');
INSERT INTO sale VALUES (15, 8, 'Harbor Street', 8, '2023-11');
INSERT INTO sale VALUES (16, 8, 'Harbor Street', 3, '2023-05');
INSERT INTO sale VALUES (17, 8, 'Harbor Street', 5, '2023-03');
INSERT INTO sale VALUES (18, 10, 'Old Town', 6, '2023-03');
INSERT INTO sale VALUES (19, 6, 'Station Kiosk', 2, '2023-02');
INSERT INTO sale VALUES (20, 13, 'Old Town', 10, '2023-08');
INSERT INTO sale VALUES (21, 9, 'Station Kiosk', 9, '2023-08');
INSERT INTO sale VALUES (22, 14, 'Harbor Street', 8, '2023-02');
